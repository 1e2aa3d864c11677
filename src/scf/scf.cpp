/// @file scf.cpp
/// RHF/UHF drivers: integrals, guess, SCF loop, result.
#include "scf/scf.hpp"

#include <chrono>
#include <cmath>
#include <limits>
#include <sstream>

#include "core/errors.hpp"
#include <spdlog/spdlog.h>  // torch-free TU: spdlog directly (see core/log.hpp)

#include "core/log.hpp"
#include "parallel/communicator.hpp"
#include "scf/dense_kernels.hpp"
#include "scf/guess.hpp"
#include "scf/integrals.hpp"
#include "scf/scf_loop.hpp"
#include "scf/stability.hpp"

namespace nnvmc::scf {

double ScfResult::homo() const {
  double h = -std::numeric_limits<double>::infinity();
  if (n_alpha > 0) h = std::max(h, eps_alpha(n_alpha - 1));
  if (n_beta > 0) h = std::max(h, eps_beta(n_beta - 1));
  return h;
}

double ScfResult::lumo() const {
  double l = std::numeric_limits<double>::infinity();
  if (n_alpha < n_mo) l = std::min(l, eps_alpha(n_alpha));
  if (n_beta < n_mo) l = std::min(l, eps_beta(n_beta));
  return std::isfinite(l) ? l : std::numeric_limits<double>::quiet_NaN();
}

namespace {

void check_options(const ScfOptions& o) {
  if (o.max_iterations < 1) throw InputError("SCF: the iteration limit must be ≥ 1");
  if (!(o.damping >= 0 && o.damping < 1)) throw InputError("SCF: --damping must be in [0, 1)");
  if (o.level_shift < 0) throw InputError("SCF: --level-shift must be ≥ 0");
  if (o.diis_size < 0) throw InputError("SCF: the DIIS subspace size must be ≥ 0");
  if (!(o.lindep_threshold > 0 && o.lindep_threshold <= 1e-2))  // (above 1e-2 chemically needed functions go)
    throw InputError("SCF: --lindep must be in (0, 0.01]");
  if (o.stability_follow_angles.empty()) throw InputError("SCF: stability following needs at least one rotation angle");
  for (const double a : o.stability_follow_angles)
    if (!(a > 0 && std::isfinite(a))) throw InputError("SCF: a stability-following rotation angle must be > 0");
  // damping mixes in the previous Fock matrix (from iteration 2) until DIIS starts: with DIIS
  // from iteration 1 or 2 it would silently do nothing
  if (o.damping > 0 && o.diis_size > 0 && o.diis_start < 3)
    throw InputError("SCF: --damping acts only before DIIS starts, from iteration 2: set --diis-start to 3 or more");
}

/// Under MPI every rank solves the same SCF, but the J/K builds' thread count (hence their
/// rounding) may differ between nodes, and degenerate orbitals then come out rotated differently
/// on each rank; CCSD terms split over ranks, PauliNet's and the HF model's orbitals must all be
/// in one basis. Every rank takes rank 0's result (sizes agree: same basis and molecule).
void share_from_root(ScfResult& r) {
  parallel::Communicator& comm = parallel::world();
  if (comm.size() == 1) return;
  double scalars[13] = {r.converged ? 1.0 : 0.0, static_cast<double>(r.iterations), r.energy, r.delta_energy,
                        r.commutator, r.s_squared, r.stability_eigenvalue, static_cast<double>(r.stability_follows),
                        r.energy_before_follow, static_cast<double>(r.iterations_following),
                        r.singlet_stability_eigenvalue, r.guess == "core" ? 1.0 : 0.0, r.other_guess_energy};
  comm.broadcast(scalars, sizeof scalars, 0);
  r.converged = scalars[0] != 0, r.iterations = static_cast<int>(scalars[1]);
  r.energy = scalars[2], r.delta_energy = scalars[3], r.commutator = scalars[4], r.s_squared = scalars[5];
  r.stability_eigenvalue = scalars[6], r.stability_follows = static_cast<int>(scalars[7]);
  r.energy_before_follow = scalars[8], r.iterations_following = static_cast<int>(scalars[9]);
  r.singlet_stability_eigenvalue = scalars[10];
  r.guess = scalars[11] != 0 ? "core" : "sad", r.other_guess_energy = scalars[12];
  for (Eigen::VectorXd* v : {&r.eps_alpha, &r.eps_beta}) comm.broadcast(v->data(), v->size() * sizeof(double), 0);
  for (Eigen::MatrixXd* m : {&r.c_alpha, &r.c_beta, &r.f_alpha, &r.f_beta, &r.d_alpha, &r.d_beta})
    comm.broadcast(m->data(), m->size() * sizeof(double), 0);
}

/// Stability analysis of a converged solution `st` (scf/stability.hpp) as options.stability says;
/// with follow, replaces `st` by the lower solution reached from each rotation along an
/// instability. Records the last lowest eigenvalue (and the energy before following) in `r`.
void analyse_stability(const detail::ScfProblem& pb, const ScfOptions& o, bool unrestricted, int n_alpha, int n_beta,
                       detail::ScfState& st, ScfResult& r) {
  StabilityMode mode = o.stability;
  if (mode == StabilityMode::automatic) mode = unrestricted ? StabilityMode::follow : StabilityMode::off;
  if (mode == StabilityMode::off) return;
  const std::size_t b = unrestricted ? 1 : 0;
  const char* method = unrestricted ? "UHF" : "RHF";
  for (int round = 0;; ++round) {
    const StabilityResult sr = uhf_stability(pb.jk, st.C[0], st.eps[0], n_alpha, st.C[b], st.eps[b], n_beta);
    r.stability_eigenvalue = sr.lowest;
    if (!sr.converged)
      spdlog::warn("scf: the stability analysis did not converge in {} J/K builds (lowest eigenvalue estimate {:.3e} Eh)",
                   sr.iterations, sr.lowest);
    // An RHF solution's rotations split into singlet ones (x_α = x_β: to another RHF solution) and
    // triplet ones (x_α = −x_β: to a UHF solution, as at stretched bonds). A triplet instability
    // below a singlet one hid it (N2 at 3 Å: −0.553 and −0.324 Eh, and an RHF solution 0.24 Eh
    // lower: a user audit), so the singlet block is searched on its own then.
    StabilityResult singlet = sr;
    if (!unrestricted) {
      const bool triplet = (sr.x_alpha + sr.x_beta).norm() < (sr.x_alpha - sr.x_beta).norm();
      r.singlet_stability_eigenvalue = triplet ? std::numeric_limits<double>::quiet_NaN() : sr.lowest;
      if (triplet && sr.lowest < -o.stability_threshold) {
        StabilityOptions same;
        same.same_spins = true;
        singlet = uhf_stability(pb.jk, st.C[0], st.eps[0], n_alpha, st.C[0], st.eps[0], n_beta, same);
        r.singlet_stability_eigenvalue = singlet.lowest;
      }
    }
    if (sr.lowest >= -o.stability_threshold) return;
    const bool singlet_unstable = singlet.lowest < -o.stability_threshold;
    const std::string rhf_finding =
        unrestricted ? std::string()
        : singlet_unstable
            ? fmt::format("; a lower RHF solution exists (RHF -> RHF eigenvalue {:.4e} Eh: --stability follow finds it, "
                          "or try another --guess){}",
                          singlet.lowest,
                          singlet.lowest > sr.lowest ? fmt::format(", and a UHF solution lower still (RHF -> UHF "
                                                                   "eigenvalue {:.4e} Eh: nnvmc scf --uhf)", sr.lowest)
                                                     : std::string())
            : std::string("; a UHF solution is lower, not an RHF one (stretched bonds, diradicals; nnvmc scf --uhf finds it)");
    if (mode == StabilityMode::check) {
      spdlog::warn("scf: the {} solution is not a minimum: the orbital-rotation Hessian has eigenvalue {:.4e} Eh{}",
                   method, sr.lowest, unrestricted ? "; --stability follow finds the lower UHF solution" : rhf_finding);
      return;
    }
    if (!unrestricted && !singlet_unstable) {  // follow: an RHF leaves only along RHF -> RHF rotations
      spdlog::warn("scf: the RHF solution is not a minimum (eigenvalue {:.4e} Eh){}", sr.lowest, rhf_finding);
      return;
    }
    if (round == o.max_stability_follows) {
      spdlog::warn("scf: the {} solution is still unstable (eigenvalue {:.4e} Eh) after {} rotations along its instabilities",
                   method, singlet.lowest, round);
      return;
    }
    // Rotate along the eigenvector (both spins together) and converge again from there; a step
    // that lands on no lower solution is retried shorter.
    const auto density_rotated_by = [&](double angle) {
      std::vector<Eigen::MatrixXd> density;
      if (unrestricted) {
        const Eigen::MatrixXd* parts[2] = {&sr.x_alpha, &sr.x_beta};
        const int occupied[2] = {n_alpha, n_beta};
        for (int s = 0; s < 2; ++s) {
          const Eigen::MatrixXd occ = rotate_occupied(st.C[s], occupied[s], angle * *parts[s]);
          density.push_back(occ * occ.transpose());
        }
      } else {  // (x_α = x_β, normalised over both: √2 x_α is the unit rotation of the spatial orbitals)
        const Eigen::MatrixXd occ = rotate_occupied(st.C[0], n_alpha, angle * std::sqrt(2.0) * singlet.x_alpha);
        density.push_back(2.0 * occ * occ.transpose());
      }
      return density;
    };
    detail::ScfState next;
    std::string failures;  // what each angle tried gave
    int iterations_tried = 0;
    for (const double angle : o.stability_follow_angles) {
      next = detail::solve_scf(pb, density_rotated_by(angle), o);
      iterations_tried += next.iterations;
      if (next.converged && next.energy < st.energy - 1e-9) break;
      failures += fmt::format("{}{:g} rad: {}", failures.empty() ? "" : "; ", angle,
                              next.converged    ? fmt::format("converged to E {:.10f} Eh, not lower", next.energy)
                              : next.off_aufbau ? std::string("stopped at a state whose occupied orbitals are not the "
                                                              "lowest of its Fock matrix")
                                                : fmt::format("did not converge in {} iterations (last E {:.10f} Eh)",
                                                              next.iterations, next.energy));
    }
    if (!next.converged || !(next.energy < st.energy - 1e-9)) {
      spdlog::warn("scf: the {} solution is unstable (orbital-Hessian eigenvalue {:.4e} Eh), but no SCF from its "
                   "orbitals rotated along the instability reached a lower one ({}); the unstable solution is kept{}",
                   method, singlet.lowest, failures,
                   failures.find("did not converge") != std::string::npos ? ": raising the iteration limit may help"
                                                                           : "");
      return;
    }
    if (!failures.empty())
      spdlog::info("scf: the longer rotations along the instability reached no lower solution ({})", failures);
    // (once: UHF's second guess following the same instability to the same solution repeated it)
    log::info_unless_repeated("scf follow", fmt::format("scf: followed {} instability (eigenvalue {:.4e} Eh): E {:.10f} -> {:.10f} Eh",
                                                        unrestricted ? "a UHF" : "an RHF -> RHF", singlet.lowest,
                                                        st.energy, next.energy));
    if (round == 0) r.energy_before_follow = st.energy;
    r.iterations_following += iterations_tried;
    next.iterations = st.iterations + iterations_tried;
    st = std::move(next);
    ++r.stability_follows;
  }
}

ScfResult solve(const System& system, const BasisSet& basis, const ScfOptions& o, bool unrestricted) {
  check_options(o);
  system.validate();
  const int n_alpha = system.n_up(), n_beta = system.n_down();
  const int n = static_cast<int>(basis.n_functions());
  if (n_alpha > n || n_beta > n)
    throw InputError("basis '" + basis.name() + "' has " + std::to_string(n) +
                     " functions, too few for " + std::to_string(n_alpha) + " α electrons");

  ScfResult r;
  r.unrestricted = unrestricted;
  r.basis = basis.name();
  r.n_basis = n;
  r.n_alpha = n_alpha;
  r.n_beta = n_beta;
  r.e_nuc = system.nuclear_repulsion();
  using clock = std::chrono::steady_clock;
  auto since = [](clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); };
  auto t0 = clock::now();
  r.overlap = overlap_matrix(basis, o.jk.integrals);
  r.h_core = core_hamiltonian(basis, system, o.jk.integrals);
  const JKBuilder jk(basis, o.jk);
  if (o.jk.df_basis)
    spdlog::debug("scf: {} functions, density fitting with {} ({} auxiliary functions, {} kept); integrals {:.3f} s; "
                  "{} dense kernels", n, o.jk.df_basis->name(), o.jk.df_basis->n_functions(), jk.cholesky_vectors(),
                  since(t0), dense_kernels().name);
  else if (jk.cholesky_vectors() > 0)
    spdlog::debug("scf: {} functions, {} Cholesky vectors (tau {:.0e}); integrals {:.3f} s; {} dense kernels", n,
                  jk.cholesky_vectors(), o.jk.cholesky_tau, since(t0), dense_kernels().name);
  else
    spdlog::debug("scf: {} functions, {} ERI-unit quartets, {}; integrals {:.3f} s", n, jk.n_quartets(),
                  jk.in_core() ? "in-core ERIs" : "direct ERIs", since(t0));
  t0 = clock::now();

  detail::ScfProblem pb{r.overlap, r.h_core, jk, r.e_nuc, {}, false};
  pb.electrons = unrestricted ? std::vector<double>{static_cast<double>(n_alpha), static_cast<double>(n_beta)}
                              : std::vector<double>{static_cast<double>(n_alpha + n_beta)};
  // The SCF from one initial guess, and (rank 0's only: share_from_root gives every rank its
  // orbitals, and no collective is inside) its stability analysis, recorded in `into`.
  const auto converge_from = [&](ScfGuess guess, ScfResult& into, const ScfOptions& opts) {
    t0 = clock::now();
    const Eigen::MatrixXd d_guess =
        guess == ScfGuess::sad ? sad_density(system, basis, o, &jk)
                               : core_density(r.h_core, r.overlap, system.n_electrons(), o.lindep_threshold);
    spdlog::debug("scf: initial guess ({}) {:.3f} s", guess == ScfGuess::sad ? "sad" : "core", since(t0));
    t0 = clock::now();
    // Each spin channel starts with its own electron count (the guess split by spin fraction).
    // (RHF: scaled by N / guess_e, UHF by N_σ · (1 / guess_e): bit for bit the scaling of before)
    const double guess_e = d_guess.cwiseProduct(r.overlap).sum();
    std::vector<Eigen::MatrixXd> d0;
    for (const double electrons : pb.electrons)
      d0.push_back(guess_e <= 0                 ? d_guess
                   : pb.electrons.size() == 1 ? Eigen::MatrixXd(d_guess * (electrons / guess_e))
                                              : Eigen::MatrixXd(d_guess * (electrons * (1.0 / guess_e))));
    detail::ScfState st = detail::solve_scf(pb, std::move(d0), opts);
    if (st.converged && parallel::world().is_root()) analyse_stability(pb, opts, unrestricted, n_alpha, n_beta, st, into);
    into.guess = guess == ScfGuess::sad ? "sad" : "core";
    return st;
  };
  const ScfResult before_solving = r;  // (a second guess starts its record from here, not from the first's)
  detail::ScfState st = converge_from(o.guess == ScfGuess::core ? ScfGuess::core : ScfGuess::sad, r, o);
  // Open shells have several UHF minima: with cheap Fock builds, the core guess too, and the lower
  // solution is kept (every rank chooses alike up to share_from_root, which settles it).
  // (closed shells, e.g. PauliNet's UHF baselines, take SAD alone: C4H4 in cc-pVDZ reached the same
  // solution from both, at 1.6x the time; stability following finds their broken-symmetry solutions)
  if (o.guess == ScfGuess::automatic && unrestricted && n_alpha != n_beta && (jk.in_core() || jk.cholesky_vectors() > 0)) {
    ScfResult other = before_solving;
    detail::ScfState from_core = converge_from(ScfGuess::core, other, o);
    // A core start that does not converge (open-shell d atoms oscillate) is tried again with
    // damping, then a level shift: dropped, the higher SAD solution was kept without a word (V in
    // def2-SVP 12 mEh, in cc-pVDZ 50 mEh above the solution these reach: a user audit)
    for (int aid = 0; aid < 2 && !from_core.converged; ++aid) {
      ScfOptions aided = o;
      if (aid == 0) aided.damping = 0.5, aided.diis_start = std::max(o.diis_start, 5);
      else aided.level_shift = std::max(o.level_shift, 0.5);
      other = before_solving;
      from_core = converge_from(ScfGuess::core, other, aided);
    }
    if (!from_core.converged && st.converged && parallel::world().is_root())
      spdlog::warn("scf: the UHF from the core-Hamiltonian guess did not converge (also with damping 0.5 and a level "
                   "shift of 0.5 Eh), so only the SAD guess's solution was compared: open shells have several UHF "
                   "minima, and a lower one may exist (try --guess core with --damping, --diis-start or --level-shift)");
    if (from_core.converged && (!st.converged || from_core.energy < st.energy - 1e-8)) {
      const double sad_energy = st.converged ? st.energy : std::numeric_limits<double>::quiet_NaN();
      if (st.converged && parallel::world().is_root())
        spdlog::info("scf: the core-Hamiltonian guess reached a lower UHF solution than the SAD guess: E {:.10f} "
                     "Eh, {:.2f} mEh below SAD's {:.10f} Eh (kept)",
                     from_core.energy, 1e3 * (sad_energy - from_core.energy), sad_energy);
      if (!st.converged && parallel::world().is_root())
        spdlog::info("scf: the SAD guess did not converge; the core-Hamiltonian guess did (E {:.10f} Eh)",
                     from_core.energy);
      st = std::move(from_core);
      r = std::move(other);
      r.other_guess_energy = sad_energy;
    } else if (from_core.converged) {
      r.other_guess_energy = from_core.energy;
    }
  }
  r.converged = st.converged;
  r.iterations = st.iterations;
  r.energy = st.energy;
  r.delta_energy = st.delta_energy;
  r.commutator = st.commutator;
  r.n_mo = static_cast<int>(st.eps[0].size());
  const std::size_t b = unrestricted ? 1 : 0;
  r.eps_alpha = st.eps[0];
  r.eps_beta = st.eps[b];
  r.c_alpha = st.C[0];
  r.c_beta = st.C[b];
  r.f_alpha = st.F[0];
  r.f_beta = st.F[b];
  r.d_alpha = r.c_alpha.leftCols(n_alpha) * r.c_alpha.leftCols(n_alpha).transpose();
  r.d_beta = r.c_beta.leftCols(n_beta) * r.c_beta.leftCols(n_beta).transpose();
  r.s_squared = unrestricted ? uhf_s_squared(r.c_alpha.leftCols(n_alpha), r.c_beta.leftCols(n_beta), r.overlap) : 0.0;
  share_from_root(r);
  if (r.n_mo < r.n_basis && parallel::world().is_root()) {
    // (once per distinct line: the molecules of a scan pretrained one after another repeat it)
    log::info_unless_repeated(
        "scf lindep", strfmt("scf: the basis is nearly linearly dependent: %d combination%s of its %d functions, with "
                             "overlap eigenvalues below %g, dropped (%d molecular orbitals)",
                             r.n_basis - r.n_mo, r.n_basis - r.n_mo == 1 ? "" : "s", r.n_basis, o.lindep_threshold,
                             r.n_mo));
  }
  spdlog::debug("scf: E = {:.12f} after {} iterations (ΔE {:.1e}, [F,D] {:.1e}), {:.3f} s", r.energy,
                r.iterations, r.delta_energy, r.commutator, since(t0));
  if (!r.converged && o.throw_on_failure) {
    std::ostringstream msg;
    msg.precision(3);
    if (st.off_aufbau)  // (not an iteration limit: it said "raise --max-iter" with |ΔE| 1e-12)
      msg << (unrestricted ? "UHF" : "RHF") << " reached " << st.aufbau_escapes + 1
          << " time(s) a stationary density whose occupied orbitals are not the lowest of its Fock matrix (mixing "
             "them with the lower empty ones did not leave it"
          << (st.aufbau_escapes < detail::kMaxAufbauEscapes ? " within --max-iter" : "")
          << "); try the other initial guess (--guess core or sad)"
          << (o.level_shift > 0 ? ", or no level shift (a shifted SCF converges to such states)" : "");
    else
      msg << (unrestricted ? "UHF" : "RHF") << " did not converge in " << o.max_iterations
          << " iterations (last |ΔE| = " << std::scientific << r.delta_energy << " Eh, max|[F,D]| = " << r.commutator
          << "); " << o.convergence_advice;
    throw NumericalError(msg.str());
  }
  return r;
}

}  // namespace

ScfResult run_rhf(const System& system, const BasisSet& basis, ScfOptions options) {
  const int ne = system.n_electrons();
  if (ne % 2 != 0 || system.spin != 0)
    throw InputError("RHF needs a closed-shell molecule, but " +
                     (system.name.empty() ? std::string("the molecule") : system.name) + " has " +
                     std::to_string(ne) + (ne == 1 ? " electron" : " electrons") + " and spin " + std::to_string(system.spin) +
                     "; use UHF (--uhf) instead");
  return solve(system, basis, options, false);
}

ScfResult run_uhf(const System& system, const BasisSet& basis, ScfOptions options) {
  return solve(system, basis, options, true);
}

ScfResult run_scf(const System& system, const BasisSet& basis, const ScfOptions& options) {
  return options.unrestricted ? run_uhf(system, basis, options) : run_rhf(system, basis, options);
}

ScfResult run_scf(const System& system, const std::string& basis_name, const ScfOptions& options) {
  return run_scf(system, make_basis(basis_name, system), options);
}

}  // namespace nnvmc::scf
