#include "ccsd/diis.hpp"

#include <torch/torch.h>

#include <algorithm>

namespace nnvmc::ccsd {

void Diis::extrapolate(std::vector<torch::Tensor>& t, const std::vector<torch::Tensor>& e) {
  if (size_ <= 0) return;
  if (t_.size() != t.size()) {  // first call: storage for `size_` pairs, touched as rows fill
    t_.clear(), e_.clear();
    for (const auto& x : t) t_.push_back(torch::empty({size_, x.numel()}, x.options()));
    for (const auto& x : e) e_.push_back(torch::empty({size_, x.numel()}, x.options()));
    overlap_.assign(std::size_t(size_), std::vector<double>(std::size_t(size_), 0.0));
  }
  const int slot = next_;
  next_ = (next_ + 1) % size_;
  stored_ = std::min(stored_ + 1, size_);
  // Slots in use are rows 0..stored_-1 (filled in order, then reused round-robin). New row of
  // overlaps: e_k·e for every stored k, one GEMV per component.
  const std::int64_t m = stored_;
  torch::Tensor row = torch::zeros({m}, torch::kFloat64);
  for (std::size_t p = 0; p < t.size(); ++p) {
    t_[p][slot].copy_(t[p].reshape(-1));
    e_[p][slot].copy_(e[p].reshape(-1));
    row += torch::mv(e_[p].narrow(0, 0, m), e_[p][slot]).to(torch::kCPU, torch::kFloat64);
  }
  const auto ra = row.accessor<double, 1>();
  for (std::int64_t k = 0; k < m; ++k)
    overlap_[std::size_t(slot)][std::size_t(k)] = overlap_[std::size_t(k)][std::size_t(slot)] = ra[k];
  if (m < 2) return;
  torch::Tensor B = torch::zeros({m + 1, m + 1}, torch::kFloat64);
  auto acc = B.accessor<double, 2>();
  double scale = 0;
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < m; ++j) acc[i][j] = overlap_[std::size_t(i)][std::size_t(j)];
    scale = std::max(scale, acc[i][i]);
  }
  if (scale > 0) B.narrow(0, 0, m).narrow(1, 0, m).div_(scale);
  for (std::int64_t i = 0; i < m; ++i) acc[i][m] = acc[m][i] = -1.0;
  torch::Tensor rhs = torch::zeros({m + 1}, torch::kFloat64);
  rhs[m] = -1.0;
  const torch::Tensor c = std::get<0>(torch::linalg_lstsq(B, rhs.unsqueeze(1))).squeeze(1).narrow(0, 0, m);
  for (std::size_t p = 0; p < t.size(); ++p) {
    const torch::Tensor rows = t_[p].narrow(0, 0, m);
    t[p] = torch::mv(rows.t(), c.to(rows.options())).view(t[p].sizes());  // Σ_k c_k t_k, one GEMV
  }
}

}  // namespace nnvmc::ccsd
