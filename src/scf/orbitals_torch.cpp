/// @file orbitals_torch.cpp
/// Vectorised evaluation of contracted Gaussians: primitives → radial parts per shell →
/// Cartesian monomials → (solid harmonics) → AOs → MOs, all as torch ops.
#include "scf/orbitals_torch.hpp"

#include <libint2/solidharmonics.h>

#include <map>

#include "core/errors.hpp"

namespace nnvmc::scf {

namespace {

torch::Tensor to_tensor(const Eigen::MatrixXd& m, torch::TensorOptions options) {
  const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> rm = m;
  return torch::from_blob(const_cast<double*>(rm.data()), {rm.rows(), rm.cols()}, torch::kFloat64)
      .clone()
      .to(options);
}

torch::Tensor index_tensor(const std::vector<int64_t>& v, const torch::Device& device) {
  return torch::tensor(v, torch::kInt64).to(device);
}

}  // namespace

GaussianOrbitals::GaussianOrbitals(const BasisSet& basis, const Eigen::MatrixXd& coefficients,
                                   torch::TensorOptions options) {
  if (coefficients.rows() != static_cast<Eigen::Index>(basis.n_functions()))
    throw InputError("GaussianOrbitals: coefficients have " + std::to_string(coefficients.rows()) +
                     " rows but the basis has " + std::to_string(basis.n_functions()) + " functions");
  const auto& shells = basis.shells();
  const auto& atoms = basis.shell_atoms();
  const auto& off = basis.shell_offsets();
  const torch::Device device = options.device();
  n_basis_ = static_cast<int64_t>(basis.n_functions());
  n_orb_ = coefficients.cols();
  max_l_ = basis.max_l();

  // Centres (one per atom index) and the primitive → shell contraction table.
  int n_centres = 0;
  for (int a : atoms) n_centres = std::max(n_centres, a + 1);
  Eigen::MatrixXd centres = Eigen::MatrixXd::Zero(n_centres, 3);
  std::vector<double> exps;
  std::vector<int64_t> prim_atom;
  std::vector<std::pair<std::size_t, double>> prim_coef;  // (shell, coefficient) per primitive
  for (std::size_t s = 0; s < shells.size(); ++s) {
    for (int k = 0; k < 3; ++k) centres(atoms[s], k) = shells[s].O[k];
    for (std::size_t p = 0; p < shells[s].nprim(); ++p) {
      exps.push_back(shells[s].alpha[p]);
      prim_atom.push_back(atoms[s]);
      prim_coef.push_back({s, shells[s].contr[0].coeff[p]});
    }
  }
  Eigen::MatrixXd contraction = Eigen::MatrixXd::Zero(exps.size(), shells.size());
  for (std::size_t p = 0; p < prim_coef.size(); ++p) contraction(p, prim_coef[p].first) = prim_coef[p].second;
  centres_ = to_tensor(centres, options);
  prim_exp_ = torch::tensor(exps, torch::kFloat64).to(options);
  prim_atom_ = index_tensor(prim_atom, device);
  contraction_ = to_tensor(contraction, options);

  // Groups of shells with equal (l, pure); AO order = group by group, shell by shell.
  std::map<std::pair<int, bool>, std::vector<std::size_t>> by_kind;
  for (std::size_t s = 0; s < shells.size(); ++s)
    by_kind[{shells[s].contr[0].l, shells[s].contr[0].pure}].push_back(s);
  std::vector<int64_t> order;
  for (const auto& [kind, members] : by_kind) {
    const auto [l, pure] = kind;
    Group g;
    g.l = l;
    g.pure = pure;
    std::vector<int64_t> g_atoms, g_shells, pa, pb, pc;
    for (std::size_t s : members) {
      g_atoms.push_back(atoms[s]);
      g_shells.push_back(static_cast<int64_t>(s));
      for (std::size_t f = off[s]; f < off[s + 1]; ++f) order.push_back(static_cast<int64_t>(f));
    }
    // libint2 standard Cartesian order: a = l … 0, b = l − a … 0, c = l − a − b.
    for (int a = l; a >= 0; --a)
      for (int b = l - a; b >= 0; --b) {
        pa.push_back(a);
        pb.push_back(b);
        pc.push_back(l - a - b);
      }
    g.atoms = index_tensor(g_atoms, device);
    g.shells = index_tensor(g_shells, device);
    g.powers = torch::stack({index_tensor(pa, device), index_tensor(pb, device), index_tensor(pc, device)});
    if (pure) {
      const int n_cart = static_cast<int>(pa.size());
      Eigen::MatrixXd T(n_cart, 2 * l + 1);
      for (int c = 0; c < n_cart; ++c)
        for (int m = -l; m <= l; ++m)
          T(c, m + l) = libint2::solidharmonics::SolidHarmonicsCoefficients<double>::coeff(
              l, m, static_cast<int>(pa[c]), static_cast<int>(pb[c]), static_cast<int>(pc[c]));
      g.to_pure = to_tensor(T, options);
    }
    groups_.push_back(std::move(g));
  }
  ao_order_ = index_tensor(order, device);
  inverse_order_ = torch::argsort(ao_order_);
  coefficients_ = to_tensor(coefficients, options).index_select(0, ao_order_);
}

torch::Tensor GaussianOrbitals::basis_values(const torch::Tensor& r) const {
  return grouped_values(r).index_select(2, inverse_order_);
}

torch::Tensor GaussianOrbitals::forward(const torch::Tensor& r) const {
  return torch::matmul(grouped_values(r), coefficients_);  // [B, N, n_orb]
}

torch::Tensor GaussianOrbitals::grouped_values(const torch::Tensor& r) const {
  TORCH_CHECK(r.dim() == 3 && r.size(2) == 3, "GaussianOrbitals: r must be [B, N, 3]");
  const int64_t B = r.size(0), N = r.size(1);
  const torch::Tensor d = r.unsqueeze(2) - centres_;          // [B, N, M, 3]
  const torch::Tensor r2 = (d * d).sum(-1);                   // [B, N, M]
  const torch::Tensor prims = torch::exp(-prim_exp_ * r2.index_select(2, prim_atom_));  // [B, N, P]
  const torch::Tensor radial = torch::matmul(prims, contraction_);                       // [B, N, S]
  // Powers d^k, k = 0 … max_l, by repeated products (no pow: finite derivatives at d = 0).
  std::vector<torch::Tensor> pw{torch::ones_like(d)};
  for (int k = 1; k <= max_l_; ++k) pw.push_back(pw.back() * d);
  const torch::Tensor powers = torch::stack(pw, -1);          // [B, N, M, 3, max_l + 1]

  std::vector<torch::Tensor> parts;
  for (const Group& g : groups_) {
    const torch::Tensor rg = radial.index_select(2, g.shells);  // [B, N, S_g]
    if (g.l == 0) {
      parts.push_back(rg);
      continue;
    }
    const torch::Tensor pg = powers.index_select(2, g.atoms);   // [B, N, S_g, 3, L+1]
    torch::Tensor ang = pg.select(3, 0).index_select(-1, g.powers[0]) *
                        pg.select(3, 1).index_select(-1, g.powers[1]) *
                        pg.select(3, 2).index_select(-1, g.powers[2]);  // [B, N, S_g, n_cart]
    if (g.pure) ang = torch::matmul(ang, g.to_pure);           // [B, N, S_g, 2l+1]
    parts.push_back((ang * rg.unsqueeze(-1)).reshape({B, N, g.shells.size(0) * ang.size(-1)}));  // no -1: N may be 0
  }
  return torch::cat(parts, 2);
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
