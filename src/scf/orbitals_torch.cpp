/// @file orbitals_torch.cpp
/// HF orbitals on electron positions: the basis's tensor table evaluated by the Gaussian-orbital
/// building block (primitives → radial parts per shell → Cartesian monomials → solid
/// harmonics → AOs → MOs, all as torch ops), and the HF Slater determinant.
#include "scf/orbitals_torch.hpp"

#include <algorithm>
#include <map>
#include <random>

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

Eigen::MatrixXd turned_functions(const BasisSet& basis, const Eigen::Matrix3d& rotation) {
  const auto n = static_cast<Eigen::Index>(basis.n_functions());
  Eigen::MatrixXd d = Eigen::MatrixXd::Zero(n, n);
  // Sample points around the centre, at radii where a unit Gaussian is well above underflow; the
  // radial part is the same at x and Rᵀx, so only the angular parts decide the fit.
  constexpr int kPoints = 40;
  Eigen::MatrixXd x(kPoints, 3);
  std::mt19937 generator(20261207);  // (fixed: the same D on every rank and run)
  std::normal_distribution<double> normal(0.0, 0.8);
  for (int k = 0; k < kPoints; ++k)
    for (int c = 0; c < 3; ++c) x(k, c) = normal(generator);
  const Eigen::MatrixXd turned = x * rotation;  // rows (Rᵀ x_k)ᵀ
  const auto values = [](const libint2::Shell& unit, const Eigen::MatrixXd& points) {
    const BasisSet one("turned", {unit}, {0});
    const GaussianOrbitals f(one, Eigen::MatrixXd::Identity(static_cast<Eigen::Index>(one.n_functions()),
                                                            static_cast<Eigen::Index>(one.n_functions())));
    const torch::Tensor v = f.basis_values(to_tensor(points, torch::kFloat64).unsqueeze(0)).squeeze(0).contiguous();
    Eigen::MatrixXd out(v.size(0), v.size(1));
    const auto a = v.accessor<double, 2>();
    for (Eigen::Index i = 0; i < out.rows(); ++i)
      for (Eigen::Index j = 0; j < out.cols(); ++j) out(i, j) = a[i][j];
    return out;  // [points, functions]
  };
  std::map<std::pair<int, bool>, Eigen::MatrixXd> blocks;  // by (l, pure)
  for (std::size_t s = 0; s < basis.n_shells(); ++s) {
    auto offset = static_cast<Eigen::Index>(basis.shell_offsets()[s]);
    for (const auto& contraction : basis.shells()[s].contr) {
      auto [it, fresh] = blocks.try_emplace({contraction.l, contraction.pure});
      if (fresh) {
        const libint2::Shell unit{{1.0}, {{contraction.l, contraction.pure, {1.0}}}, {{0.0, 0.0, 0.0}}};
        const Eigen::MatrixXd at = values(unit, x), at_turned = values(unit, turned);
        const Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(at);
        it->second = qr.solve(at_turned);  // at · D = at_turned
        const double residual = (at * it->second - at_turned).cwiseAbs().maxCoeff();
        if (qr.rank() < at.cols() || !(residual < 1e-9 * std::max(1.0, at_turned.cwiseAbs().maxCoeff())))
          throw NumericalError("turned_functions: the functions of angular momentum " + std::to_string(contraction.l) +
                               " do not turn into each other (residual " + std::to_string(residual) +
                               "): is the rotation proper?");
      }
      const Eigen::Index size = it->second.rows();
      d.block(offset, offset, size, size) = it->second;
      offset += size;
    }
  }
  return d;
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
