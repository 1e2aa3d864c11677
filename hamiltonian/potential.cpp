#include "hamiltonian/potential.hpp"

namespace nnvmc {

torch::Tensor potential_energy(const torch::Tensor& r, const torch::Tensor& nuclei,
                               const torch::Tensor& charges, double e_nn) {
  const int64_t n = r.size(1);
  const auto r_en = (r.unsqueeze(2) - nuclei).norm(2, -1);  // [B, N, M]
  auto v = -(charges / r_en).sum({1, 2});
  if (n > 1) {
    const auto iu = torch::triu_indices(n, n, 1, torch::TensorOptions().dtype(torch::kLong).device(r.device()));
    const auto d = r.index_select(1, iu[0]) - r.index_select(1, iu[1]);  // [B, P, 3]
    v = v + (1.0 / d.norm(2, -1)).sum(1);
  }
  return v + e_nn;
}

}  // namespace nnvmc
