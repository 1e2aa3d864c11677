#include "app/scf_flags.hpp"

#include <climits>
#include <map>

#include "app/commands.hpp"
#include "core/errors.hpp"

namespace nnvmc::app {

void add_scf_convergence_flags(CLI::App* cmd, scf::ScfOptions& options, std::string& guess,
                               const std::string& max_iter_flag, bool can_follow) {
  cmd->add_option("--guess", guess, "initial SCF guess: sad | core")->capture_default_str();
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
  std::map<std::string, scf::StabilityMode> modes{
      {"auto", scf::StabilityMode::automatic}, {"off", scf::StabilityMode::off}, {"check", scf::StabilityMode::check}};
  if (can_follow) modes.emplace("follow", scf::StabilityMode::follow);
  cmd->add_option("--stability", options.stability,
                  can_follow ? "stability analysis of the converged SCF: check (warn when the solution is a saddle "
                               "point, not a minimum of the energy), follow (UHF: rotate the orbitals along each "
                               "instability and converge again, e.g. the broken-symmetry UHF of a stretched bond), off; "
                               "auto (default): follow for UHF, off for RHF"
                             : "stability analysis of the converged RHF: check (warn when a lower RHF or UHF solution "
                               "exists, e.g. at stretched bonds) or off; auto (default): off")
      ->transform(CLI::CheckedTransformer(modes, CLI::ignore_case));
  options.convergence_advice = "raise " + max_iter_flag + ", or try --level-shift, or --damping with --diis-start 3 or later";
}

void apply_scf_guess(const std::string& guess, scf::ScfOptions& options, const std::string& command) {
  const std::map<std::string, scf::ScfGuess> guesses{{"sad", scf::ScfGuess::sad}, {"core", scf::ScfGuess::core}};
  const auto g = guesses.find(guess);
  if (g == guesses.end()) throw InputError(command + ": --guess must be 'sad' or 'core', got '" + guess + "'");
  options.guess = g->second;
}

}  // namespace nnvmc::app
