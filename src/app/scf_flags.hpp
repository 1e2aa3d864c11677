#pragma once
/// @file scf_flags.hpp
/// The SCF convergence flags (--guess, the iteration limit, --level-shift, --damping,
/// --diis-start, --stability) of `nnvmc scf` and of the RHF inside `nnvmc ccsd`, defined once.
#include <string>

#include <CLI/CLI.hpp>

#include "scf/scf.hpp"

namespace nnvmc::app {

/// The flags that are read as text and checked after parsing (apply_scf_flags).
struct ScfFlagText {
  std::string guess = "sad";       ///< --guess
  std::string stability = "auto";  ///< --stability
};

/// Adds the flags to `cmd`, writing into `options` and `text`. `max_iter_flag` names the
/// iteration limit ("--max-iter" for scf; "--scf-max-iter" for ccsd, whose --max-iterations is
/// the CCSD's). `can_follow`: the command can run UHF (the help of --stability says what follow does there).
void add_scf_convergence_flags(CLI::App* cmd, scf::ScfOptions& options, ScfFlagText& text,
                               const std::string& max_iter_flag, bool can_follow);

/// `x` for a six-decimal report line (`below`: for another precision): round-off around zero (a rotation that costs nothing, ⟨S²⟩
/// of a closed shell) as 0, not -0.000000.
inline double printable_zero(double x, double below = 5e-7) { return x > -below && x < below ? 0.0 : x; }

/// Sets options.guess and options.stability from the text. @throws InputError naming
/// `command`'s flag
void apply_scf_flags(const ScfFlagText& text, scf::ScfOptions& options, const std::string& command);

}  // namespace nnvmc::app
