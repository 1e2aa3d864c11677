/// @file density_fitting.cpp
/// Three-centre integrals (pq|P), the Coulomb metric (P|Q) and B = (pq|P) L⁻ᵀ (or V^{-1/2}).
#include "scf/density_fitting.hpp"

#include <libint2.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "core/elements.hpp"
#include "core/errors.hpp"
#include "core/log.hpp"
#include "scf/basis_file.hpp"
#include "scf/dense_kernels.hpp"
#include "scf/eri_units.hpp"
#include "scf/parallel.hpp"

namespace nnvmc::scf {

std::string fitting_basis_dir() { return default_basis_dir() + "/fitting"; }

BasisSet make_fitting_basis(const std::string& name, const System& system) {
  BasisOptions o;
  o.directory = fitting_basis_dir();
  o.max_l = kFittingMaxL;
  BasisSet aux;
  try {
    aux = make_basis(name, system, o);
  } catch (const InputError& e) {  // (it read as the orbital basis's error)
    throw InputError(std::string("auxiliary (fitting) basis, --df-basis: ") + e.what());
  }
  // A fitting basis carries charge in its s functions (spherical shells of l > 0 integrate to
  // zero): without them an atom's density is fitted with no charge, and the SCF converges to a
  // wrong energy (LiH fitted with h functions alone: −10.27 Eh, a user audit).
  std::vector<bool> has_s(system.atoms.size(), false);
  for (std::size_t sh = 0; sh < aux.n_shells(); ++sh)
    for (const auto& c : aux.shells()[sh].contr)
      if (c.l == 0) has_s[std::size_t(aux.shell_atoms()[sh])] = true;
  for (std::size_t a = 0; a < system.atoms.size(); ++a)
    if (!has_s[a])
      throw InputError("auxiliary (fitting) basis, --df-basis: '" + name + "' has no s functions for atom " +
                       std::to_string(a + 1) + " (" + element_symbol(system.atoms[a].Z) +
                       "), so it cannot fit that atom's charge; use a JK-fitting basis such as " + kDefaultFittingBasis);
  return aux;
}

BasisSet atom_subset(const BasisSet& aux, int atom) {
  std::vector<libint2::Shell> shells;
  for (std::size_t s = 0; s < aux.n_shells(); ++s)
    if (aux.shell_atoms()[s] == atom) shells.push_back(aux.shells()[s]);
  const std::size_t n = shells.size();
  return BasisSet(aux.name(), std::move(shells), std::vector<int>(n, 0));
}

namespace {

/// A Coulomb engine for two- or three-centre integrals up to max_l. Made as a four-centre one up
/// to that kind's limit, 5, and turned into the kind before its l is raised further: libint2
/// checks l against the kind's own limit at construction. Its Boys-function evaluator is sized at
/// construction only (set_max_l does not resize it), for m up to 4·min(max_l, 5), which covers
/// the l_P + l_p + l_q ≤ 7 + 5 + 5 of any fitting integral here. (Made for l = 0 first, the
/// metric came out with 30 of H2O's 113 directions near zero when no other engine had sized the
/// shared evaluator before.)
libint2::Engine fitting_engine(libint2::BraKet kind, std::size_t max_nprim, int max_l, const IntegralOptions& o) {
  libint2::Engine e(libint2::Operator::coulomb, max_nprim, std::min(max_l, kOrbitalMaxL), 0, o.engine_precision);
  e.set(kind);
  e.set_max_l(static_cast<std::size_t>(max_l));
  return e;
}

/// V_PQ = (P|Q) over the auxiliary functions, [n_aux, n_aux].
Eigen::MatrixXd coulomb_metric(const BasisSet& aux, const IntegralOptions& o, int threads) {
  std::vector<libint2::Engine> pool(threads, fitting_engine(libint2::BraKet::xs_xs, aux.max_nprim(), aux.max_l(), o));
  const auto& sh = aux.shells();
  const auto& off = aux.shell_offsets();
  const std::size_t ns = sh.size();
  Eigen::MatrixXd V = Eigen::MatrixXd::Zero(aux.n_functions(), aux.n_functions());
  parallel_for(ns, threads, [&](std::size_t P, int t) {
    const auto& buf = pool[t].results();
    for (std::size_t Q = 0; Q <= P; ++Q) {
      pool[t].compute(sh[P], libint2::Shell::unit(), sh[Q], libint2::Shell::unit());
      if (!buf[0]) continue;
      const std::size_t nP = sh[P].size(), nQ = sh[Q].size();
      for (std::size_t a = 0; a < nP; ++a)
        for (std::size_t b = 0; b < nQ; ++b) V(off[P] + a, off[Q] + b) = V(off[Q] + b, off[P] + a) = buf[0][a * nQ + b];
    }
  });
  return V;
}

}  // namespace

Eigen::MatrixXd density_fitted_pairs(const BasisSet& basis, const BasisSet& aux, const IntegralOptions& o) {
  if (aux.n_functions() == 0) throw InputError("density fitting: the auxiliary basis '" + aux.name() + "' is empty");
  ensure_libint_initialized();
  const int threads = resolve_threads(o.threads);
  const Eigen::Index n = Eigen::Index(basis.n_functions()), n_aux = Eigen::Index(aux.n_functions());

  using clock = std::chrono::steady_clock;
  const auto since = [](clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); };
  auto t0 = clock::now();
  const Eigen::MatrixXd V = coulomb_metric(aux, o, threads);
  // V = L Lᵀ, and B = (pq|P) L⁻ᵀ: B Bᵀ = (pq|P) V⁻¹ (P|rs) as with V^{-1/2}, at a third of the
  // cost (a triangular solve in place, no eigendecomposition). A metric with a pivot below
  // kMinFittingPivot of its largest diagonal (nearly dependent auxiliary functions) takes V^{-1/2} from
  // its eigenvectors instead, the directions below kFittingCondition dropped.
  const Eigen::LLT<Eigen::MatrixXd> llt(V);
  const bool use_cholesky = llt.info() == Eigen::Success &&
                            llt.matrixLLT().diagonal().cwiseAbs2().minCoeff() > kMinFittingPivot * V.diagonal().maxCoeff();
  Eigen::MatrixXd v_inv_half;  // eigenvector route: [n_aux, kept]
  if (!use_cholesky) {
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(V);
    const Eigen::VectorXd& lambda = es.eigenvalues();  // ascending
    const double cut = kFittingCondition * lambda(n_aux - 1);
    Eigen::Index first = 0;
    while (first < n_aux && lambda(first) <= cut) ++first;
    const Eigen::Index kept = n_aux - first;
    v_inv_half = es.eigenvectors().rightCols(kept) * lambda.tail(kept).cwiseSqrt().cwiseInverse().asDiagonal();
    if (first > 0)
      log::info(strfmt("density fitting: %ld of the %ld auxiliary functions' metric directions dropped (eigenvalue "
                       "below %g of the largest)", static_cast<long>(first), static_cast<long>(n_aux),
                       kFittingCondition));
  }
  const double t_metric = since(t0);
  t0 = clock::now();
  // (pq|P) over the unique ERI-unit pairs (scf/eri_units.hpp: generally contracted shells from
  // their shared primitives) that pass the Schwarz bound with the largest (P|P).
  const std::vector<EriUnit> units = eri_units(basis);
  const Eigen::MatrixXd Q = unit_schwarz_bounds(basis, units, threads, nullptr, /*same_atom_unbounded=*/true);
  const double t_schwarz = since(t0);
  t0 = clock::now();
  const auto& ash = aux.shells();
  const auto& aoff = aux.shell_offsets();
  std::vector<EriUnit> aux_units;
  for (std::size_t P = 0; P < ash.size(); ++P) aux_units.push_back(lone_shell_unit(ash[P], aoff[P]));
  const EriUnit unit_shell = lone_shell_unit(libint2::Shell::unit(), 0);
  std::vector<double> q_shell(ash.size(), 0.0);  // sqrt(max (P|P)) over each auxiliary shell's functions
  for (std::size_t P = 0; P < ash.size(); ++P)
    for (std::size_t a = aoff[P]; a < aoff[P + 1]; ++a) q_shell[P] = std::max(q_shell[P], std::sqrt(std::max(0.0, V(a, a))));
  const double q_aux = *std::max_element(q_shell.begin(), q_shell.end());
  std::vector<std::pair<std::size_t, std::size_t>> pairs;
  for (std::size_t u1 = 0; u1 < units.size(); ++u1)
    for (std::size_t u2 = 0; u2 <= u1; ++u2)
      if (Q(u1, u2) * q_aux >= o.schwarz_threshold) pairs.push_back({u1, u2});
  std::vector<EriUnitEngine> pool;
  for (int t = 0; t < threads; ++t)
    pool.push_back(EriUnitEngine::three_center(std::max(basis.max_nprim(), aux.max_nprim()),
                                               std::max(basis.max_l(), aux.max_l()), o.engine_precision));
  const Eigen::Index rows = n * (n + 1) / 2;
  Eigen::MatrixXd T = Eigen::MatrixXd::Zero(rows, n_aux);  // (pq|P)
  parallel_for(pairs.size(), threads, [&](std::size_t task, int t) {
    const auto [u1, u2] = pairs[task];
    const EriUnit &A = units[u1], &B = units[u2];
    const std::size_t n1 = A.n_functions(), n2 = B.n_functions();
    for (std::size_t P = 0; P < ash.size(); ++P) {
      if (Q(u1, u2) * q_shell[P] < o.schwarz_threshold) continue;
      const double* v = pool[t].compute(aux_units[P], unit_shell, A, B);
      if (!v) continue;
      const std::size_t nP = ash[P].size();
      for (std::size_t a = 0; a < nP; ++a)
        for (std::size_t i = 0; i < n1; ++i) {
          const std::size_t p = A.first_function + i;
          for (std::size_t j = 0; j < n2; ++j) {
            const std::size_t q = B.first_function + j;
            if (q > p) continue;  // (the diagonal block's upper half)
            T(Eigen::Index(p * (p + 1) / 2 + q), Eigen::Index(aoff[P] + a)) = v[(a * n1 + i) * n2 + j];
          }
        }
    }
  });
  const double t_three = since(t0);
  t0 = clock::now();
  if (use_cholesky) {
    const Eigen::MatrixXd U = llt.matrixU();
    trsm_upper_right(T.data(), rows, T.cols(), rows, U.data(), U.rows(), threads);  // T ← T U⁻¹, U = Lᵀ
  } else {
    Eigen::MatrixXd B(rows, v_inv_half.cols());
    gemm(false, false, rows, B.cols(), T.cols(), 1.0, T.data(), rows, v_inv_half.data(), v_inv_half.rows(), 0.0,
         B.data(), rows, threads);
    T = std::move(B);
  }
  spdlog::debug("density fitting: metric ({}) {:.3f} s, Schwarz bounds {:.3f} s, (pq|P) over {} unit pairs {:.3f} s, "
                "B = (pq|P) {} {:.3f} s", use_cholesky ? "Cholesky" : "eigenvectors", t_metric, t_schwarz,
                pairs.size(), t_three, use_cholesky ? "L^-T" : "V^-1/2", since(t0));
  return T;
}

}  // namespace nnvmc::scf
