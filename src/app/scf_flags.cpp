#include "app/scf_flags.hpp"

#include <climits>
#include <map>

#include "app/commands.hpp"
#include "core/errors.hpp"

namespace nnvmc::app {

void add_scf_convergence_flags(CLI::App* cmd, scf::ScfOptions& options, std::string& guess,
                               const std::string& max_iter_flag) {
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
  options.convergence_advice = "raise " + max_iter_flag + ", or try --level-shift, or --damping with --diis-start 3 or later";
}

void apply_scf_guess(const std::string& guess, scf::ScfOptions& options, const std::string& command) {
  const std::map<std::string, scf::ScfGuess> guesses{{"sad", scf::ScfGuess::sad}, {"core", scf::ScfGuess::core}};
  const auto g = guesses.find(guess);
  if (g == guesses.end()) throw InputError(command + ": --guess must be 'sad' or 'core', got '" + guess + "'");
  options.guess = g->second;
}

}  // namespace nnvmc::app
