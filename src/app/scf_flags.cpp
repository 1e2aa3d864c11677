#include "app/scf_flags.hpp"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <map>
#include <thread>

#include "app/commands.hpp"
#include "core/errors.hpp"

namespace nnvmc::app {

void add_scf_convergence_flags(CLI::App* cmd, scf::ScfOptions& options, ScfFlagText& text,
                               const std::string& max_iter_flag, bool can_follow) {
  cmd->add_option("--guess", text.guess,
                  "initial SCF guess: sad | core | auto (sad; for open-shell UHF with stored, Cholesky or density-fitted "
                  "integrals also core, the lower solution kept: open shells have several UHF minima)")
      ->capture_default_str();
  cmd->add_option(max_iter_flag, options.max_iterations, "maximum SCF iterations")
      ->capture_default_str()
      ->check(integer_in(1, INT_MAX));
  cmd->add_option("--level-shift", options.level_shift, "SCF virtual level shift (Eh)")
      ->capture_default_str()
      ->check(finite_in(0, 100));
  cmd->add_option("--damping", options.damping, "SCF Fock damping before DIIS starts, in [0, 1) (needs --diis-start 3 or later)")
      ->capture_default_str();
  cmd->add_option("--diis-start", options.diis_start, "first SCF DIIS iteration")
      ->capture_default_str()
      ->check(integer_in(0, 100000));
  cmd->add_option("--lindep", options.lindep_threshold,
                  "drop the combinations of basis functions whose overlap-matrix eigenvalue is below this (canonical "
                  "orthogonalisation, as Psi4's s_tolerance); larger values help diffuse basis sets on close atoms "
                  "converge")
      ->capture_default_str()
      ->check(finite_in(1e-14, 1e-2));
  cmd->add_option("--stability", text.stability,
                  can_follow ? "stability analysis of the converged SCF: check (warn when the solution is a saddle "
                               "point, not a minimum of the energy), follow (rotate the orbitals along each "
                               "instability and converge again: UHF, e.g. the broken-symmetry UHF of a stretched bond; "
                               "RHF, along RHF -> RHF instabilities to a lower RHF solution), off; "
                               "auto: follow for UHF, off for RHF"
                             : "stability analysis of the converged RHF: check (say whether a lower RHF or UHF "
                               "solution exists, e.g. at stretched bonds, where RCCSD is poor), follow (check, and move "
                               "to a lower RHF solution where one exists), or off; auto: off")
      ->capture_default_str();
  options.convergence_advice = "raise " + max_iter_flag + ", or try --level-shift, or --damping with --diis-start 3 or later";
}

void add_threads_flag(CLI::App* cmd, int& threads, const std::string& help) {
  const int most = std::max(1, 4 * static_cast<int>(std::thread::hardware_concurrency()));
  cmd->add_option("--threads", threads, help)->capture_default_str()->check(integer_in(0, most));
}

void add_molecule_state_flags(CLI::App* cmd, MoleculeStateFlags& flags) {
  cmd->add_option("--charge", flags.charge,
                  "total charge (default: the molecule file's; an .xyz file is neutral); the spin is then the lowest "
                  "unless --spin gives it");
  cmd->add_option("--spin", flags.spin, "n_up - n_down (2S; default: the file's, or the lowest)");
}

System load_molecule_with_state(const std::string& name, const MoleculeStateFlags& flags) {
  System s = load_molecule(name, default_molecules_dir());
  if (flags.charge && *flags.charge != s.charge) {
    s.charge = *flags.charge;
    if (!flags.spin) s.spin = std::abs(s.n_electrons() % 2);  // the lowest, after the charge
  }
  if (flags.spin) s.spin = *flags.spin;
  if (flags.charge || flags.spin) {  // another state than the file's: its reference energy is not this one's
    s.e_ref.reset();
    s.e_ref_source.clear();
  }
  try {
    s.validate();
  } catch (const InputError& e) {
    std::string set_by;
    if (flags.charge) set_by = "--charge " + std::to_string(*flags.charge);
    if (flags.spin) set_by += (set_by.empty() ? "" : ", ") + std::string("--spin ") + std::to_string(*flags.spin);
    throw InputError(std::string(e.what()) + (set_by.empty() ? "" : " (with " + set_by + ")"));
  }
  return s;
}

void apply_scf_flags(const ScfFlagText& text, scf::ScfOptions& options, const std::string& command) {
  const std::map<std::string, scf::ScfGuess> guesses{
      {"sad", scf::ScfGuess::sad}, {"core", scf::ScfGuess::core}, {"auto", scf::ScfGuess::automatic}};
  const auto g = guesses.find(text.guess);
  if (g == guesses.end())
    throw InputError(command + ": --guess must be 'auto', 'sad' or 'core', got '" + text.guess + "'");
  options.guess = g->second;
  const std::map<std::string, scf::StabilityMode> modes{{"auto", scf::StabilityMode::automatic},
                                                        {"off", scf::StabilityMode::off},
                                                        {"check", scf::StabilityMode::check},
                                                        {"follow", scf::StabilityMode::follow}};
  const auto m = modes.find(text.stability);
  if (m == modes.end())
    throw InputError(command + ": --stability must be auto, off, check or follow, got '" + text.stability + "'");
  options.stability = m->second;
}

}  // namespace nnvmc::app
