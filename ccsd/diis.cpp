#include "ccsd/diis.hpp"

#include <torch/torch.h>

namespace nnvmc::ccsd {

torch::Tensor Diis::extrapolate(const torch::Tensor& t, const torch::Tensor& e) {
  if (size_ <= 0) return t;
  ts_.push_back(t.clone());
  es_.push_back(e.clone());
  if (int(ts_.size()) > size_) ts_.pop_front(), es_.pop_front();
  const std::int64_t m = std::int64_t(ts_.size());
  if (m < 2) return t;
  torch::Tensor B = torch::zeros({m + 1, m + 1}, torch::kFloat64);
  auto acc = B.accessor<double, 2>();
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j <= i; ++j) acc[i][j] = acc[j][i] = es_[i].dot(es_[j]).item<double>();
  const double scale = B.narrow(0, 0, m).narrow(1, 0, m).diagonal().max().item<double>();
  if (scale > 0) B.narrow(0, 0, m).narrow(1, 0, m).div_(scale);
  for (std::int64_t i = 0; i < m; ++i) acc[i][m] = acc[m][i] = -1.0;
  torch::Tensor rhs = torch::zeros({m + 1}, torch::kFloat64);
  rhs[m] = -1.0;
  const torch::Tensor c = std::get<0>(torch::linalg_lstsq(B, rhs.unsqueeze(1))).squeeze(1);
  torch::Tensor out = torch::zeros_like(t);
  for (std::int64_t i = 0; i < m; ++i) out += c[i].item<double>() * ts_[i];
  return out;
}

}  // namespace nnvmc::ccsd
