#include "models/wavefunction.hpp"

#include "core/errors.hpp"

namespace nnvmc {

torch::Tensor WaveFunction::orbitals(const torch::Tensor&) {
  throw Error("ansatz '" + type() + "' does not provide orbitals for pretraining");
}

NucleiTensors nuclei_tensors(const System& system, torch::TensorOptions options) {
  const auto m = static_cast<int64_t>(system.atoms.size());
  auto pos = torch::empty({m, 3}, torch::kFloat64);
  auto z = torch::empty({m}, torch::kFloat64);
  auto p = pos.accessor<double, 2>();
  auto q = z.accessor<double, 1>();
  for (int64_t i = 0; i < m; ++i) {
    for (int k = 0; k < 3; ++k) p[i][k] = system.atoms[i].position[k];
    q[i] = system.atoms[i].Z;
  }
  return {pos.to(options), z.to(options)};
}

LogPsi lu_slogdet(const torch::Tensor& a) {
  const auto [lu, pivots] = torch::linalg_lu_factor(a);
  return slogdet_from_lu(lu, pivots);
}

LogPsi slogdet_from_lu(const torch::Tensor& lu, const torch::Tensor& pivots) {
  const auto diag = lu.diagonal(0, -2, -1);  // [..., n]
  // Each pivot p_i ≠ i (1-based) is one row swap.
  const auto swaps = (pivots != torch::arange(1, lu.size(-1) + 1, pivots.options())).sum(-1);
  const auto parity = (1 - 2 * (swaps % 2)).to(lu.scalar_type());
  return {(torch::sign(diag.detach()).prod(-1) * parity), diag.abs().log().sum(-1)};
}

LogPsi signed_logsumexp(const torch::Tensor& sign, const torch::Tensor& logabs) {
  const auto shift = std::get<0>(logabs.max(-1, /*keepdim=*/true)).detach();
  const auto sum = (sign * torch::exp(logabs - shift)).sum(-1);
  return {torch::sign(sum).detach(), torch::log(torch::abs(sum)) + shift.squeeze(-1)};
}

}  // namespace nnvmc
