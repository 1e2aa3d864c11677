#include "models/hf/hf_determinant.hpp"

#include <Eigen/SVD>
#include <algorithm>
#include <limits>
#include <utility>

#include "blocks/tensor_blocks.hpp"
#include "scf/basis_table.hpp"
#include "scf/integrals.hpp"
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
  table64_ = scf::basis_table(basis_);
}

SignedFwdLap HartreeFockDeterminant::forward_laplacian(const FwdLap& r, const SystemTensors& sys) {
  using Op = Blocks<FwdLap>;
  const auto opts = r.value.options();
  {
    const std::lock_guard<std::mutex> lock(cache_mutex_);
    if (!table_.prim_exp.defined() || table_.prim_exp.scalar_type() != opts.dtype().toScalarType() ||
        table_.prim_exp.device() != opts.device()) {
      table_ = table64_.to(opts);
      // The coefficients in the walkers' dtype/device, once (no host data in later passes).
      const Eigen::MatrixXd* coefficients[2] = {&c_alpha_, &c_beta_};
      for (int s = 0; s < 2; ++s) {
        const auto& c = *coefficients[s];
        coefficients_[s] = torch::from_blob(const_cast<double*>(c.data()), {c.cols(), c.rows()}, torch::kFloat64)
                               .t()
                               .to(opts, /*non_blocking=*/false, /*copy=*/true);  // [n_basis, n_s] (Eigen is column-major)
      }
    }
  }
  const int64_t ranges[2][2] = {{0, n_up_}, {n_up_, n_up_ + n_down_}};
  torch::Tensor sign;
  FwdLap logabs;
  for (int s = 0; s < 2; ++s) {
    const int64_t lo = ranges[s][0], hi = ranges[s][1];
    if (hi == lo) continue;
    GaussianOrbitalSpec spec;
    spec.basis = &table_;
    spec.coefficients = coefficients_[s];
    spec.nuclei = sys.nuclei.to(opts);
    const auto phi = Op::gaussian_orbitals(Op::slice_electrons(r, 1, lo, hi), spec);   // [B, n_s, n_s]
    const auto det = Op::log_det(Op::reshape_features(phi, 1, {1, hi - lo}));          // [B, 1]
    sign = sign.defined() ? sign * det.sign : det.sign;
    logabs = logabs.value.defined() ? Op::add(logabs, det.logabs) : det.logabs;
  }
  return Op::signed_logsumexp(sign, logabs);
}

namespace {
/// The mean of the distinct shell centres (the nuclei that carry functions).
Eigen::Vector3d centre_of(const scf::BasisSet& b) {
  Eigen::Vector3d sum = Eigen::Vector3d::Zero();
  int atoms = 0, last = -1;
  for (std::size_t k = 0; k < b.n_shells(); ++k) {
    if (b.shell_atoms()[k] == last) continue;
    last = b.shell_atoms()[k];
    sum += Eigen::Vector3d(b.shells()[k].O[0], b.shells()[k].O[1], b.shells()[k].O[2]);
    ++atoms;
  }
  return atoms > 0 ? Eigen::Vector3d(sum / atoms) : sum;
}

/// `b` turned by `rotation` about `from` and moved there to `to` (bohr): centres O → R(O − from) + to.
scf::BasisSet turned(const scf::BasisSet& b, const Eigen::Matrix3d& rotation, const Eigen::Vector3d& from,
                     const Eigen::Vector3d& to) {
  std::vector<libint2::Shell> shells = b.shells();
  for (auto& sh : shells) {
    const Eigen::Vector3d o = rotation * (Eigen::Vector3d(sh.O[0], sh.O[1], sh.O[2]) - from) + to;
    for (int x = 0; x < 3; ++x) sh.O[static_cast<std::size_t>(x)] = o[x];
  }
  return scf::BasisSet(b.name(), std::move(shells), b.shell_atoms());
}
}  // namespace

double HartreeFockDeterminant::align_orbitals_to(const HartreeFockDeterminant& ref, const Eigen::Matrix3d& rotation) {
  if (ref.n_up_ != n_up_ || ref.n_down_ != n_down_) return std::numeric_limits<double>::quiet_NaN();
  // The overlap is taken with the two centres placed together, the reference's orbitals turned
  // with their molecule: the networks see only relative positions, so a molecule moved as a whole
  // needs the same orbitals (uncentred, a translated copy overlapped nothing, and the rotation
  // scrambled its targets: a user audit)
  const Eigen::MatrixXd s = scf::cross_overlap_matrix(
      turned(ref.basis_, rotation, centre_of(ref.basis_), centre_of(basis_)), basis_);  // [n_ref, n]
  const Eigen::MatrixXd d = scf::turned_functions(ref.basis_, rotation);                // [n_ref, n_ref]
  double smallest = 1.0;
  const std::pair<const Eigen::MatrixXd*, Eigen::MatrixXd*> spins[2] = {{&ref.c_alpha_, &c_alpha_},
                                                                       {&ref.c_beta_, &c_beta_}};
  for (const auto& [c_ref, c] : spins) {
    if (c->cols() == 0) continue;
    const Eigen::MatrixXd m = (d * (*c_ref)).transpose() * s * (*c);  // [n_s, n_s]
    const Eigen::JacobiSVD<Eigen::MatrixXd> svd(m, Eigen::ComputeFullU | Eigen::ComputeFullV);
    *c = (*c) * (svd.matrixV() * svd.matrixU().transpose());
    smallest = std::min(smallest, svd.singularValues().minCoeff());
  }
  {
    const std::lock_guard<std::mutex> lock(cache_mutex_);
    table_ = GaussianBasisTable();  // coefficients_ are rebuilt with the table on the next pass
  }
  set_options(options_);  // the orbitals of the rotated coefficients
  return smallest;
}

void HartreeFockDeterminant::set_options(torch::TensorOptions options) {
  options_ = options;
  alpha_ = scf::GaussianOrbitals(basis_, c_alpha_, options);
  beta_ = scf::GaussianOrbitals(basis_, c_beta_, options);
}

torch::Tensor HartreeFockDeterminant::orbitals(const torch::Tensor& r, const SystemTensors&) {
  {
    const std::lock_guard<std::mutex> lock(cache_mutex_);
    if (r.scalar_type() != options_.dtype().toScalarType() || r.device() != options_.device())
      set_options(r.options().requires_grad(false));
  }
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
