#include "train/finite_walkers.hpp"

#include <algorithm>

#include "parallel/communicator.hpp"

namespace nnvmc {

std::int64_t max_excluded_walkers(std::int64_t b) { return std::max<std::int64_t>(1, b / 100); }

FiniteWalkers finite_walkers(const torch::Tensor& e, int ranks) {
  FiniteWalkers f;
  f.mask = torch::isfinite(e.detach());
  f.excluded = e.size(0) - f.mask.sum().item<std::int64_t>();
  f.ok = f.excluded <= max_excluded_walkers(e.size(0)) && f.excluded < e.size(0);
  if (f.ok && f.excluded > 0 && ranks > 1) {  // one host read per rank, only when walkers are excluded
    const auto mask = f.mask.cpu();
    for (int r = 0; r < ranks && f.empty_rank < 0; ++r) {
      const auto p = parallel::partition(e.size(0), r, ranks);
      if (p.count > 0 && !mask.slice(0, p.offset, p.offset + p.count).any().item<bool>()) f.empty_rank = r;
    }
    f.ok = f.empty_rank < 0;
  }
  return f;
}

}  // namespace nnvmc
