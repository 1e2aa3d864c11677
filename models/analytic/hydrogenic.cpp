#include "models/analytic/hydrogenic.hpp"

namespace nnvmc {

Hydrogenic::Hydrogenic(const System& system, double zeta) {
  set_built_for(system);
  zeta_ = register_parameter("zeta", torch::tensor(zeta, torch::kFloat64));
}

LogPsi Hydrogenic::forward(const torch::Tensor& r, const SystemTensors& sys) {
  const auto d = (r - sys.nuclei[0]).norm(2, -1);  // [B, N]
  const auto logabs = -(zeta_ * d).sum(1);
  return {torch::ones_like(logabs).detach(), logabs};
}

SignedFwdLap Hydrogenic::forward_laplacian(const FwdLap& r, const SystemTensors& sys) {
  using Op = Blocks<FwdLap>;
  const auto centre = sys.nuclei.slice(0, 0, 1);                                        // [1, 3]
  const auto d = Op::reshape_features(Op::norm(Op::sub_centres(r, centre)), 1, {1});  // [B, N, 1]
  const auto l = Op::mul_const(Op::sum_electrons(d, 1), -zeta_);                        // [B, 1]
  return Op::signed_logsumexp(torch::ones_like(l.value), l);
}

GaussianDeterminant::GaussianDeterminant(const System& system, torch::Tensor centres,
                                         torch::Tensor alphas)
    : n_up_(system.n_up()), n_down_(system.n_down()) {
  centres_ = register_buffer("centres", centres.to(torch::kFloat64));
  alphas_ = register_parameter("alphas", alphas.to(torch::kFloat64));
}

LogPsi GaussianDeterminant::forward(const torch::Tensor& r, const SystemTensors&) {
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
