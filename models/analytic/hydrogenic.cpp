#include "models/analytic/hydrogenic.hpp"

namespace nnvmc {

Hydrogenic::Hydrogenic(const System& system, double zeta) {
  const auto& p = system.atoms.at(0).position;
  centre_ = register_buffer("centre", torch::tensor({p[0], p[1], p[2]}, torch::kFloat64));
  zeta_ = register_parameter("zeta", torch::tensor(zeta, torch::kFloat64));
}

LogPsi Hydrogenic::forward(const torch::Tensor& r) {
  const auto d = (r - centre_).norm(2, -1);  // [B, N]
  const auto logabs = -(zeta_ * d).sum(1);
  return {torch::ones_like(logabs).detach(), logabs};
}

GaussianDeterminant::GaussianDeterminant(const System& system, torch::Tensor centres,
                                         torch::Tensor alphas)
    : n_up_(system.n_up()), n_down_(system.n_down()) {
  centres_ = register_buffer("centres", centres.to(torch::kFloat64));
  alphas_ = register_parameter("alphas", alphas.to(torch::kFloat64));
}

LogPsi GaussianDeterminant::forward(const torch::Tensor& r) {
  // phi[b, i, j] = exp(-alpha_j |r_i - c_j|^2)
  const auto d2 = (r.unsqueeze(2) - centres_).square().sum(-1);  // [B, N, N]
  const auto phi = torch::exp(-alphas_ * d2);
  torch::Tensor sign = torch::ones({r.size(0)}, r.options());
  torch::Tensor logabs = torch::zeros({r.size(0)}, r.options());
  const std::array<std::array<int64_t, 2>, 2> spins{{{0, n_up_}, {n_up_, n_up_ + n_down_}}};
  for (const auto& [lo, hi] : spins) {
    if (hi == lo) continue;
    const auto block = phi.slice(1, lo, hi).slice(2, lo, hi);
    const auto [s, l] = lu_slogdet(block);
    sign = sign * s;
    logabs = logabs + l;
  }
  return {sign.detach(), logabs};
}

}  // namespace nnvmc
