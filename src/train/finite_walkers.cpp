#include "train/finite_walkers.hpp"

#include <algorithm>

namespace nnvmc {

std::int64_t max_excluded_walkers(std::int64_t b) { return std::max<std::int64_t>(1, b / 100); }

FiniteWalkers finite_walkers(const torch::Tensor& e) {
  FiniteWalkers f;
  f.mask = torch::isfinite(e.detach());
  f.excluded = e.size(0) - f.mask.sum().item<std::int64_t>();
  f.ok = f.excluded <= max_excluded_walkers(e.size(0)) && f.excluded < e.size(0);
  return f;
}

}  // namespace nnvmc
