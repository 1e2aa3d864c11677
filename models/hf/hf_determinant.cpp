#include "models/hf/hf_determinant.hpp"

#include "scf/scf.hpp"

namespace nnvmc {

HartreeFockDeterminant::HartreeFockDeterminant(const System& system, const std::string& basis_name)
    : basis_(scf::make_basis(basis_name, system)), n_up_(system.n_up()), n_down_(system.n_down()) {
  scf::ScfOptions o;
  o.unrestricted = true;
  const auto r = scf::run_scf(system, basis_, o);
  energy_ = r.energy;
  c_alpha_ = r.c_alpha.leftCols(n_up_);
  c_beta_ = r.c_beta.leftCols(n_down_);
  set_options(torch::kFloat64);
  set_built_for(system);
}

void HartreeFockDeterminant::set_options(torch::TensorOptions options) {
  options_ = options;
  alpha_ = scf::GaussianOrbitals(basis_, c_alpha_, options);
  beta_ = scf::GaussianOrbitals(basis_, c_beta_, options);
}

torch::Tensor HartreeFockDeterminant::orbitals(const torch::Tensor& r, const SystemTensors&) {
  if (r.scalar_type() != options_.dtype().toScalarType() || r.device() != options_.device())
    set_options(r.options().requires_grad(false));
  const int64_t b = r.size(0), n = n_up_ + n_down_;
  auto phi = torch::zeros({b, n, n}, r.options().requires_grad(false));
  std::vector<torch::Tensor> rows;
  if (n_up_ > 0) {
    auto up = alpha_(r.slice(1, 0, n_up_));  // [B, n↑, n↑]
    rows.push_back(torch::cat({up, torch::zeros({b, n_up_, n_down_}, r.options())}, 2));
  }
  if (n_down_ > 0) {
    auto down = beta_(r.slice(1, n_up_, n));  // [B, n↓, n↓]
    rows.push_back(torch::cat({torch::zeros({b, n_down_, n_up_}, r.options()), down}, 2));
  }
  return torch::cat(rows, 1).unsqueeze(1);
}

LogPsi HartreeFockDeterminant::forward(const torch::Tensor& r, const SystemTensors& sys) {
  const auto [sign, logabs] = lu_slogdet(orbitals(r, sys).squeeze(1));
  return {sign.detach(), logabs};
}

}  // namespace nnvmc
