/// @file scf_loop.cpp
/// SCF iterations: Fock build, DIIS, damping, level shift, diagonalisation.
#include "scf/scf_loop.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>

#include <spdlog/spdlog.h>  // torch-free TU: spdlog directly (see core/log.hpp)

#include "core/errors.hpp"
#include "scf/diis.hpp"

namespace nnvmc::scf::detail {

Eigen::MatrixXd orthogonalizer(const Eigen::MatrixXd& S, double threshold) {
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(S);
  const Eigen::VectorXd& s = es.eigenvalues();
  int first = 0;
  while (first < s.size() && s(first) < threshold) ++first;
  const int m = static_cast<int>(s.size()) - first;
  if (m == 0) throw NumericalError("SCF: the overlap matrix has no eigenvalue above the linear-dependency threshold");
  return es.eigenvectors().rightCols(m) * s.tail(m).cwiseSqrt().cwiseInverse().asDiagonal();
}

Eigen::VectorXd aufbau_occupations(const Eigen::VectorXd& eps, double electrons, double max_occ,
                                   bool fractional) {
  Eigen::VectorXd occ = Eigen::VectorXd::Zero(eps.size());
  double left = electrons;
  int i = 0;
  for (; i < eps.size() && left > 1e-12; ++i) {
    occ(i) = std::min(max_occ, left);
    left -= occ(i);
  }
  if (left > 1e-12)
    throw NumericalError("SCF: " + std::to_string(electrons) + " electrons do not fit in " +
                         std::to_string(eps.size()) + " orbitals");
  if (fractional && i > 0) {
    const int homo = i - 1;
    int lo = homo, hi = homo;
    while (lo > 0 && std::abs(eps(lo - 1) - eps(homo)) < 1e-4) --lo;
    while (hi + 1 < eps.size() && std::abs(eps(hi + 1) - eps(homo)) < 1e-4) ++hi;
    const double shared = occ.segment(lo, hi - lo + 1).sum();
    occ.segment(lo, hi - lo + 1).setConstant(shared / (hi - lo + 1));
  }
  return occ;
}

namespace {

/// Diagonalises F in the orthonormal basis X: returns C = X V and ascending energies.
void diagonalize(const Eigen::MatrixXd& F, const Eigen::MatrixXd& X, Eigen::MatrixXd& C,
                 Eigen::VectorXd& eps) {
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(X.transpose() * F * X);
  eps = es.eigenvalues();
  C = X * es.eigenvectors();
}

/// A stationary density that is not the aufbau density of its own Fock matrix: with no coupling
/// between its occupied orbitals and lower virtual ones ([F, D] = 0, e.g. fragments so far apart
/// that their orbitals do not overlap), the SCF steps between such states (H2 at 30 bohr: H⁻…H⁺ and
/// H⁺…H⁻, the same energy), and the usual tests take that for convergence.
/// Returns the density with each occupied orbital that lies above an empty one mixed 1:1 with it
/// (the pairs taken from the top of the occupied and the bottom of the empty ones), or nothing
/// when the occupied orbitals are the lowest (within 1e-6 Eh). [n, n]
std::optional<Eigen::MatrixXd> unaufbau_escape(const Eigen::MatrixXd& F, const Eigen::MatrixXd& D,
                                               const Eigen::MatrixXd& S, const Eigen::MatrixXd& X, double max_occ) {
  Eigen::MatrixXd C;
  Eigen::VectorXd eps;
  diagonalize(F, X, C, eps);
  // occupation of each canonical orbital in D (0 or max_occ where [F, D] = 0); the occupied ones
  // are the n largest (within a degenerate set D may mix orbitals, each then partly occupied)
  const Eigen::VectorXd w = (C.transpose() * S * D * S * C).diagonal() / max_occ;
  const auto n = static_cast<std::size_t>(std::lround(w.sum()));
  std::vector<Eigen::Index> order(static_cast<std::size_t>(eps.size()));
  for (Eigen::Index k = 0; k < eps.size(); ++k) order[static_cast<std::size_t>(k)] = k;
  std::stable_sort(order.begin(), order.end(), [&](Eigen::Index a, Eigen::Index b) { return w(a) > w(b); });
  std::vector<Eigen::Index> occupied(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(std::min(n, order.size())));
  std::vector<Eigen::Index> empty(order.begin() + static_cast<std::ptrdiff_t>(occupied.size()), order.end());
  std::sort(occupied.begin(), occupied.end());  // ascending energy (eps is ascending)
  std::sort(empty.begin(), empty.end());
  std::vector<std::pair<Eigen::Index, Eigen::Index>> pairs;  // (occupied, empty) with ε_occupied > ε_empty
  for (std::size_t i = 0; i < std::min(occupied.size(), empty.size()); ++i) {
    const Eigen::Index o = occupied[occupied.size() - 1 - i], v = empty[i];
    if (eps(o) - eps(v) <= 1e-6) break;
    pairs.emplace_back(o, v);
  }
  if (pairs.empty()) return std::nullopt;
  Eigen::MatrixXd occ(C.rows(), static_cast<Eigen::Index>(occupied.size()));
  for (std::size_t i = 0; i < occupied.size(); ++i) occ.col(static_cast<Eigen::Index>(i)) = C.col(occupied[i]);
  for (const auto& [o, v] : pairs) {
    const auto col = std::find(occupied.begin(), occupied.end(), o) - occupied.begin();
    occ.col(col) = (C.col(o) + C.col(v)) / std::sqrt(2.0);
  }
  return max_occ * occ * occ.transpose();  // (fully occupied: the electron count of D, whatever it mixed)
}

}  // namespace

/// Incremental Fock builds once max|[F,D]| is below this ...
constexpr double kIncrementalBuildsBelow = 1e-5;
/// ... with a full build every this many.
constexpr int kFullFockBuildEvery = 20;

ScfState solve_scf(const ScfProblem& pb, std::vector<Eigen::MatrixXd> density, const ScfOptions& o) {
  const std::size_t nch = pb.electrons.size();
  const bool restricted = nch == 1;
  const double max_occ = restricted ? 2.0 : 1.0;
  const double k_factor = restricted ? 0.5 : 1.0;
  const Eigen::MatrixXd X = orthogonalizer(pb.S, o.lindep_threshold);

  ScfState st;
  st.D = std::move(density);
  st.C.resize(nch);
  st.eps.resize(nch);
  st.F.resize(nch);
  std::vector<Eigen::VectorXd> occ(nch);
  std::vector<Eigen::MatrixXd> f_prev;
  Diis diis(std::max(o.diis_size, 1));
  double e_old = 0;
  Eigen::MatrixXd J;
  std::vector<Eigen::MatrixXd> K;
  // Near convergence, incremental builds: J/K of the density's change added to the last ones
  // (J/K are linear in D). The change is small there, and so is its build's rounding, which
  // with a full build kept an SCF on a nearly dependent basis hovering at its tolerances (an H8
  // chain in aug-cc-pVDZ: not converged in 100 iterations with 2 threads; 12 now). Only near
  // convergence: the path there, which decides the solution an open shell reaches, is unchanged.
  // Exact ERIs only: a Cholesky K costs in proportion to the density's rank, n_occ for D but n
  // for its change, and its GEMMs' rounding did not stall (the H8 chain: 13 iterations).
  const bool incremental = pb.jk.cholesky_vectors() == 0;
  Eigen::MatrixXd j_built, d_built;
  std::vector<Eigen::MatrixXd> k_built, dc_built;
  int since_full = 0;
  double comm_before = std::numeric_limits<double>::infinity();

  for (int it = 1; it <= o.max_iterations; ++it) {
    st.iterations = it;
    Eigen::MatrixXd d_total = st.D[0];
    for (std::size_t c = 1; c < nch; ++c) d_total += st.D[c];
    if (!incremental || !d_built.size() || comm_before >= kIncrementalBuildsBelow ||
        ++since_full >= kFullFockBuildEvery) {
      pb.jk.build(d_total, st.D, J, K);
      since_full = 0;
    } else {
      std::vector<Eigen::MatrixXd> dd(nch);
      for (std::size_t c = 0; c < nch; ++c) dd[c] = st.D[c] - dc_built[c];
      pb.jk.build(d_total - d_built, dd, J, K);
      J += j_built;
      for (std::size_t c = 0; c < nch; ++c) K[c] += k_built[c];
    }
    if (incremental) {
      j_built = J;
      k_built = K;
      d_built = d_total;
      dc_built = st.D;
    }
    std::vector<Eigen::MatrixXd> err(nch);
    double energy = pb.e_nuc, comm = 0;
    for (std::size_t c = 0; c < nch; ++c) {
      st.F[c] = pb.H + J - k_factor * K[c];
      energy += 0.5 * st.D[c].cwiseProduct(pb.H + st.F[c]).sum();
      const Eigen::MatrixXd FDS = st.F[c] * st.D[c] * pb.S;
      err[c] = X.transpose() * (FDS - FDS.transpose()) * X;
      comm = std::max(comm, err[c].cwiseAbs().maxCoeff());
    }
    if (!std::isfinite(energy) || !std::isfinite(comm))
      throw NumericalError("SCF: non-finite energy or Fock matrix at iteration " + std::to_string(it));
    st.energy = energy;
    st.delta_energy = std::abs(energy - e_old);
    st.commutator = comm;
    comm_before = comm;
    e_old = energy;
    if (it > 1 && st.delta_energy < o.energy_tolerance && comm < o.commutator_tolerance) {
      // converged, unless the occupied orbitals are not the lowest of their Fock matrix
      // (fractional occupations, the SAD atoms', are the aufbau ones by construction)
      std::vector<std::optional<Eigen::MatrixXd>> mixed(nch);
      bool aufbau = true;
      for (std::size_t c = 0; c < nch && !pb.fractional; ++c) {
        mixed[c] = unaufbau_escape(st.F[c], st.D[c], pb.S, X, max_occ);
        aufbau = aufbau && !mixed[c];
      }
      if (aufbau) {
        st.converged = true;
        break;
      }
      // not converged: the caller says why (such a state's canonical orbitals, which it
      // returns, are not the density's, and neither its energy nor (T) belongs to them)
      // (at the last iteration a mixed density would be returned unconverged with the Fock
      // matrix, energy and orbitals of the state it left, and called an iteration limit)
      if (st.aufbau_escapes == kMaxAufbauEscapes || it == o.max_iterations) {
        st.off_aufbau = true;
        break;
      }
      ++st.aufbau_escapes;
      spdlog::info("scf: iteration {}: the density is stationary (|ΔE| {:.1e}, max|[F,D]| {:.1e}) but its occupied "
                   "orbitals are not the lowest of its Fock matrix; mixing them with the lower empty ones ({} of {})",
                   it, st.delta_energy, comm, st.aufbau_escapes, kMaxAufbauEscapes);
      for (std::size_t c = 0; c < nch; ++c)
        if (mixed[c]) st.D[c] = std::move(*mixed[c]);
      diis = Diis(std::max(o.diis_size, 1));  // its history holds the states left
      f_prev.clear();
      comm_before = std::numeric_limits<double>::infinity();  // (a new density: a full build, as before)
      continue;
    }
    // Extrapolate (DIIS) or damp, then shift virtuals and diagonalise.
    std::vector<Eigen::MatrixXd> f_use = st.F;
    if (o.diis_size > 0 && it >= o.diis_start) {
      f_use = diis.extrapolate(st.F, err);
    } else if (o.damping > 0 && !f_prev.empty()) {
      for (std::size_t c = 0; c < nch; ++c) f_use[c] = (1 - o.damping) * st.F[c] + o.damping * f_prev[c];
    }
    f_prev = f_use;
    for (std::size_t c = 0; c < nch; ++c) {
      if (o.level_shift > 0 && it > 1) {
        // F + μ (S − S P S), P the projector on occupied orbitals: virtuals move up by μ.
        const Eigen::MatrixXd SP = pb.S * (st.D[c] / max_occ);
        f_use[c] += o.level_shift * (pb.S - SP * pb.S);
      }
      diagonalize(f_use[c], X, st.C[c], st.eps[c]);
      occ[c] = aufbau_occupations(st.eps[c], pb.electrons[c], max_occ, pb.fractional);
      st.D[c] = st.C[c] * occ[c].asDiagonal() * st.C[c].transpose();
    }
  }
  // Canonical orbitals of the final (unshifted, unextrapolated) Fock matrices.
  for (std::size_t c = 0; c < nch; ++c) diagonalize(st.F[c], X, st.C[c], st.eps[c]);
  return st;
}

}  // namespace nnvmc::scf::detail
