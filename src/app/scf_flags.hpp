#pragma once
/// @file scf_flags.hpp
/// The SCF convergence flags (--guess, the iteration limit, --level-shift, --damping,
/// --diis-start, --stability) of `nnvmc scf` and of the RHF inside `nnvmc ccsd`, defined once.
#include <string>

#include <CLI/CLI.hpp>

#include "scf/scf.hpp"

namespace nnvmc::app {

/// Adds the flags to `cmd`, writing into `options` and `guess` (the --guess text, read by
/// apply_scf_guess). `max_iter_flag` names the iteration limit ("--max-iter" for scf;
/// "--scf-max-iter" for ccsd, whose --max-iterations is the CCSD's). `can_follow`: --stability
/// may be `follow` (a command that can run UHF).
void add_scf_convergence_flags(CLI::App* cmd, scf::ScfOptions& options, std::string& guess,
                               const std::string& max_iter_flag, bool can_follow);

/// Sets options.guess from the --guess text. @throws InputError naming `command`'s --guess
void apply_scf_guess(const std::string& guess, scf::ScfOptions& options, const std::string& command);

}  // namespace nnvmc::app
