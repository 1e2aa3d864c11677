/// @file orbitals_torch.cpp
/// HF orbitals on electron positions: the basis's tensor table evaluated by the Gaussian-orbital
/// building block (primitives → radial parts per shell → Cartesian monomials → solid
/// harmonics → AOs → MOs, all as torch ops), and the HF Slater determinant.
#include "scf/orbitals_torch.hpp"

#include "core/errors.hpp"
#include "scf/basis_table.hpp"

namespace nnvmc::scf {

namespace {

torch::Tensor to_tensor(const Eigen::MatrixXd& m, torch::TensorOptions options) {
  const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> rm = m;
  return torch::from_blob(const_cast<double*>(rm.data()), {rm.rows(), rm.cols()}, torch::kFloat64)
      .clone()
      .to(options);
}

}  // namespace

GaussianOrbitals::GaussianOrbitals(const BasisSet& basis, const Eigen::MatrixXd& coefficients,
                                   torch::TensorOptions options)
    : table_(basis_table(basis, options)), n_orb_(coefficients.cols()) {
  if (coefficients.rows() != static_cast<Eigen::Index>(basis.n_functions()))
    throw InputError("GaussianOrbitals: coefficients have " + std::to_string(coefficients.rows()) +
                     " rows but the basis has " + std::to_string(basis.n_functions()) + " functions");
  Eigen::MatrixXd centres = Eigen::MatrixXd::Zero(table_.n_atoms, 3);
  for (std::size_t s = 0; s < basis.shells().size(); ++s)
    for (int k = 0; k < 3; ++k) centres(basis.shell_atoms()[s], k) = basis.shells()[s].O[k];
  centres_ = to_tensor(centres, options);
  coefficients_ = to_tensor(coefficients, options);
}

torch::Tensor GaussianOrbitals::basis_values(const torch::Tensor& r) const {
  // the identity's products and sums of zeros are exact: the AOs themselves
  return gaussian_orbital_values(table_, torch::eye(table_.n_basis, coefficients_.options()), centres_, r);
}

torch::Tensor GaussianOrbitals::forward(const torch::Tensor& r) const {
  TORCH_CHECK(r.dim() == 3 && r.size(2) == 3, "GaussianOrbitals: r must be [B, N, 3]");
  return gaussian_orbital_values(table_, coefficients_, centres_, r);  // [B, N, n_orb]
}

std::pair<torch::Tensor, torch::Tensor> HartreeFockOrbitals::matrices(const torch::Tensor& r) const {
  TORCH_CHECK(r.dim() == 3 && r.size(1) == n_alpha + n_beta,
              "HartreeFockOrbitals: r must be [B, n_alpha + n_beta, 3]");
  return {alpha(r.narrow(1, 0, n_alpha)), beta(r.narrow(1, n_alpha, n_beta))};
}

std::pair<torch::Tensor, torch::Tensor> HartreeFockOrbitals::log_slater(const torch::Tensor& r) const {
  const auto [up, down] = matrices(r);
  torch::Tensor sign = torch::ones({r.size(0)}, r.options());
  torch::Tensor logabs = torch::zeros({r.size(0)}, r.options());
  for (const torch::Tensor& m : {up, down}) {
    if (m.size(1) == 0) continue;
    // Pivoted LU, not linalg_slogdet (wrong float32 second derivatives, see blocks.hpp's
    // lu_slogdet, which scf cannot use: it sits below blocks). Singular: sign 0, log|det| −inf.
    const auto [lu, pivots, info] = torch::linalg_lu_factor_ex(m);
    const auto diag = lu.diagonal(0, -2, -1);
    const auto swaps = (pivots != torch::arange(1, m.size(-1) + 1, pivots.options())).sum(-1);
    sign = sign * torch::sign(diag.detach()).prod(-1) * (1 - 2 * (swaps % 2)).to(m.scalar_type());
    logabs = logabs + diag.abs().log().sum(-1);
  }
  return {sign, logabs};
}

HartreeFockOrbitals occupied_orbitals(const ScfResult& result, const BasisSet& basis,
                                      torch::TensorOptions options) {
  if (result.n_basis != static_cast<int>(basis.n_functions()))
    throw InputError("occupied_orbitals: the SCF result has " + std::to_string(result.n_basis) +
                     " basis functions but the basis has " + std::to_string(basis.n_functions()));
  HartreeFockOrbitals h;
  h.n_alpha = result.n_alpha;
  h.n_beta = result.n_beta;
  h.alpha = GaussianOrbitals(basis, result.c_alpha.leftCols(result.n_alpha), options);
  h.beta = GaussianOrbitals(basis, result.c_beta.leftCols(result.n_beta), options);
  return h;
}

}  // namespace nnvmc::scf
