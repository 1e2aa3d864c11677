/// nnvmc scf MOLECULE [--basis B] [--uhf] [--json] [--guess auto|core|sad] [--max-iter N]
///                    [--level-shift MU] [--damping D] [--cholesky TAU | --df [--df-basis AUX]] [--threads T]
#include <chrono>
#include <cmath>
#include <iostream>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "app/commands.hpp"
#include "app/scf_flags.hpp"
#include "core/errors.hpp"
#include "core/log.hpp"
#include "core/system.hpp"
#include "parallel/communicator.hpp"
#include "scf/basis.hpp"
#include "scf/dense_kernels_torch.hpp"
#include "scf/density_fitting.hpp"
#include "scf/scf.hpp"
#include "core/json_text.hpp"

namespace nnvmc::app {

namespace {
struct ScfArgs {
  std::string molecule;
  std::string basis = "cc-pvdz";
  ScfFlagText scf_text;  ///< --guess, --stability
  MoleculeStateFlags state;  ///< --charge, --spin
  bool uhf = false, json = false;
  bool df = false;                                    ///< --df: density-fitted J/K
  std::string df_basis = scf::kDefaultFittingBasis;   ///< --df-basis
  scf::ScfOptions options;
};

/// Orbital energies as a JSON array (finite values only).
nlohmann::json to_json(const Eigen::VectorXd& v) {
  return nlohmann::json(std::vector<double>(v.data(), v.data() + v.size()));
}

void print_orbitals(const char* label, const Eigen::VectorXd& eps, int n_occ) {
  // Occupied orbitals and up to five virtuals.
  const int shown = std::min<int>(eps.size(), n_occ + 5);
  std::cout << label;
  for (int i = 0; i < shown; ++i)
    std::cout << strfmt(" %.6f%s", eps(i), i + 1 == n_occ ? " |" : "");
  if (shown < eps.size()) std::cout << " ...";
  std::cout << "\n";
}

void run_scf_command(ScfArgs& a) {
  // (the dense kernels' threads: the integrals' count; 0 leaves libtorch's default, all cores)
  scf::install_torch_dense_kernels(a.options.jk.integrals.threads);
  const System system = load_molecule_with_state(a.molecule, a.state);  // charge and spin before the closed-shell check
  scf::require_same_molecule_and_basis_on_all_ranks(system, a.basis);
  if (const std::string w = system.short_distance_warning(); !w.empty()) log::warn(w);
  apply_scf_flags(a.scf_text, a.options, "scf");
  a.options.unrestricted = a.uhf;
  const auto t0 = std::chrono::steady_clock::now();
  const scf::BasisSet basis = scf::make_basis(a.basis, system);
  if (a.df && a.options.jk.cholesky_tau > 0)  // (--cholesky 0, exact ERIs, is no conflict)
    throw InputError("scf: --df and --cholesky TAU > 0 exclude each other: density-fitted or Cholesky J/K, not both");
  if (a.df) a.options.jk.df_basis = std::make_shared<const scf::BasisSet>(scf::make_fitting_basis(a.df_basis, system));
  const scf::ScfResult r = scf::run_scf(system, basis, a.options);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  if (!parallel::world().is_root()) return;  // every rank holds the same result (share_from_root); rank 0 prints
  const std::string method = r.unrestricted ? "UHF" : "RHF";
  if (a.json) {
    int frame = -1;
    molecule_spec_label(a.molecule, system, &frame);
    nlohmann::json j{{"molecule", a.molecule}, {"basis", a.basis}, {"method", method},
                     {"e_hf", r.energy}, {"e_nuc", r.e_nuc}, {"n_basis", r.n_basis}, {"n_mo", r.n_mo},
                     {"n_alpha", r.n_alpha}, {"n_beta", r.n_beta}, {"converged", r.converged},
                     {"iterations", r.iterations}, {"homo", r.homo()}, {"seconds", seconds},
                     {"cholesky_tau", a.options.jk.cholesky_tau},
                     {"integrals", a.df ? "density_fitted" : a.options.jk.cholesky_tau > 0 ? "cholesky" : "exact"},
                     {"eps_alpha", to_json(r.eps_alpha)},
                     // (as ccsd --json gives them: an ion is not its neutral, a user audit)
                     {"charge", system.charge}, {"spin", system.spin}, {"energy_units", "hartree"}};
    if (std::isfinite(r.lumo())) j["lumo"] = r.lumo();
    if (frame >= 0) j["frame"] = frame;  // (the frame "FILE.xyz@K" read, counted from 0: @-1 of ten is 9)
    if (a.df) {
      j["df_basis"] = a.df_basis;
      j["n_aux"] = a.options.jk.df_basis->n_functions();
    }
    if (r.unrestricted) j["s_squared"] = r.s_squared + 0.0;
    if (std::isfinite(r.stability_eigenvalue)) {  // (NaN: no analysis; +inf: no virtual orbitals to rotate into)
      j["stability_eigenvalue"] = r.stability_eigenvalue;
      if (std::isfinite(r.singlet_stability_eigenvalue)) j["singlet_stability_eigenvalue"] = r.singlet_stability_eigenvalue;
      j["stability_follows"] = r.stability_follows;
      if (r.stability_follows > 0) j["e_before_follow"] = r.energy_before_follow;
    }
    if (r.unrestricted) j["eps_beta"] = to_json(r.eps_beta);
    j["guess"] = r.guess;
    if (std::isfinite(r.other_guess_energy)) j["e_other_guess"] = r.other_guess_energy;
    std::cout << json_text(j) << std::endl;
    return;
  }
  // (the integrals are said: a Cholesky J/K is an approximation, 17 mEh at tau 1e-2 for H2O)
  const double tau = a.options.jk.cholesky_tau;
  const std::string integrals =
      a.df ? strfmt("J/K density-fitted (%s, %d auxiliary functions)", a.df_basis.c_str(),
                    static_cast<int>(a.options.jk.df_basis->n_functions()))
           : tau > 0 ? strfmt("J/K from Cholesky vectors (tau %g)", tau) : std::string("exact integrals");
  std::cout << strfmt("%s %s, basis %s: %d basis functions%s, %d α + %d β electrons, %s\n", method.c_str(),
                      molecule_spec_label(a.molecule, system).c_str(), a.basis.c_str(), static_cast<int>(r.n_basis),
                      r.n_mo < r.n_basis ? strfmt(" (%d orbitals: %d linearly dependent combination%s dropped)", r.n_mo,
                                                  r.n_basis - r.n_mo, r.n_basis - r.n_mo == 1 ? "" : "s").c_str()
                                         : "",
                      static_cast<int>(r.n_alpha), static_cast<int>(r.n_beta),
                      integrals.c_str())
            << strfmt("E_HF       %.10f Eh\n", r.energy)
            << strfmt("E_nuc      %.10f Eh\n", r.e_nuc)
            << strfmt("iterations %d%s (|ΔE| %.1e, max|[F,D]| %.1e), %.2f s\n", static_cast<int>(r.iterations),
                      r.iterations_following > 0
                          ? strfmt(", %d of them after following instabilities", r.iterations_following).c_str()
                          : "",
                      r.delta_energy, r.commutator, seconds)
            << strfmt("HOMO       %.6f Eh\n", r.homo());
  if (std::isfinite(r.lumo())) std::cout << strfmt("LUMO       %.6f Eh\n", r.lumo());
  if (r.unrestricted) {
    const double sz = 0.5 * (r.n_alpha - r.n_beta);
    std::cout << strfmt("<S^2>      %.6f (exact for S = %g: %.6f)\n", printable_zero(r.s_squared), sz, sz * (sz + 1));
  }
  if (r.stability_follows > 0)
    std::cout << strfmt("stability  followed %d instabilit%s of the first solution (E %.10f Eh)\n", r.stability_follows,
                        r.stability_follows == 1 ? "y" : "ies", r.energy_before_follow);
  if (std::isfinite(r.stability_eigenvalue))
    std::cout << strfmt("stability  lowest orbital-Hessian eigenvalue %.6f Eh%s (%s)\n", printable_zero(r.stability_eigenvalue),
                        std::isfinite(r.singlet_stability_eigenvalue) &&
                                r.singlet_stability_eigenvalue != r.stability_eigenvalue
                            ? strfmt(", RHF -> RHF %.6f Eh", printable_zero(r.singlet_stability_eigenvalue)).c_str()
                            : "",
                        r.stability_eigenvalue >= -a.options.stability_threshold ? "a minimum: stable" : "unstable");
  // (two guesses that ended apart: which one gave the result, and where the other ended)
  if (std::isfinite(r.other_guess_energy) && std::abs(r.other_guess_energy - r.energy) >= 1e-6)
    std::cout << strfmt("guess      %s (the %s guess converged to %.10f Eh, %.2f mEh %s)\n",
                        r.guess == "core" ? "core Hamiltonian" : "SAD", r.guess == "core" ? "SAD" : "core-Hamiltonian",
                        r.other_guess_energy, 1e3 * std::abs(r.other_guess_energy - r.energy),
                        r.other_guess_energy >= r.energy ? "higher" : "lower");
  print_orbitals(r.unrestricted ? "ε_α (Eh):" : "ε (Eh):", r.eps_alpha, r.n_alpha);
  if (r.unrestricted) print_orbitals("ε_β (Eh):", r.eps_beta, r.n_beta);
}
}  // namespace

void add_scf_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("scf", "Hartree–Fock (RHF, or UHF with --uhf) for a molecule");
  auto a = std::make_shared<ScfArgs>();
  cmd->add_option("molecule", a->molecule, "name in configs/molecules (e.g. h2o) or a .yaml/.xyz file")
      ->required();
  cmd->add_option("--basis", a->basis, "basis set: " + scf::available_bases_list(scf::default_basis_dir()) + ", or an NWChem-format file (a path with a '/' or ending in .nw, as the Basis Set Exchange exports it)")
      ->capture_default_str();
  cmd->add_flag("--uhf", a->uhf, "unrestricted Hartree–Fock (needed for open shells)");
  add_molecule_state_flags(cmd, a->state);
  cmd->add_flag("--json", a->json, "print one JSON object (e_hf, e_nuc, n_basis, converged, ...)");
  add_scf_convergence_flags(cmd, a->options, a->scf_text, "--max-iter", true);
  a->options.convergence_advice += " (nnvmc scf)";
  cmd->add_option("--schwarz", a->options.jk.integrals.schwarz_threshold,
                  "skip ERI quartets of shells (with --df: shell pair and auxiliary shell triples) whose Schwarz bound "
                  "is below this (Eh)")
      ->capture_default_str()
      ->check(finite_in(0, 1e-4));  // larger thresholds drop integrals that matter
  cmd->add_option("--cholesky", a->options.jk.cholesky_tau,
                  "J/K from Cholesky vectors of the ERIs to this threshold (e.g. 1e-6; 0 = exact ERIs)")
      ->capture_default_str()
      ->check(finite_in(0, 1e-2));
  CLI::Option* df = cmd->add_flag("--df", a->df,
                                  "density-fitted J/K with an auxiliary basis (--df-basis), as Psi4's default scf_type df "
                                  "(whose own default fitting basis for cc-pVXZ is cc-pVXZ-JKFIT; it calls "
                                  "def2-universal-JKFIT def2-qzvpp-jkfit): much faster for large or heavy-atom bases, "
                                  "with a fitting error of order 1e-5 Eh in the total energy");
  cmd->add_option("--df-basis", a->df_basis,
                  "auxiliary basis of --df: " + scf::available_bases_list(scf::fitting_basis_dir()) +
                      ", or an NWChem-format file")
      ->capture_default_str()
      ->needs(df);
  add_threads_flag(cmd, a->options.jk.integrals.threads, "integral threads (0 = all cores)");
  cmd->callback([a] { run_scf_command(*a); });
}

}  // namespace nnvmc::app
