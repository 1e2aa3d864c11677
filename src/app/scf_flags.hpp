#pragma once
/// @file scf_flags.hpp
/// The SCF convergence flags (--guess, the iteration limit, --level-shift, --damping,
/// --diis-start, --stability) of `nnvmc scf` and of the RHF inside `nnvmc ccsd`, defined once.
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "core/system.hpp"
#include "scf/scf.hpp"

namespace nnvmc::app {

/// The flags that are read as text and checked after parsing (apply_scf_flags).
struct ScfFlagText {
  std::string guess = "auto";      ///< --guess
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

/// Adds `--threads` (0 = all cores, at most four per hardware thread: each integral thread holds
/// its own libint engines, tens of MB for cc-pVTZ, and 4096 of them were killed for it).
void add_threads_flag(CLI::App* cmd, int& threads, const std::string& help);

/// --charge and --spin of `nnvmc scf` and `nnvmc ccsd` (an .xyz file holds neither).
struct MoleculeStateFlags {
  std::optional<int> charge;  ///< --charge: total charge (default: the molecule file's, 0 for .xyz)
  std::optional<int> spin;    ///< --spin: n_up − n_down (default: the file's; after --charge, the lowest)
};

/// Adds --charge and --spin to `cmd`.
void add_molecule_state_flags(CLI::App* cmd, MoleculeStateFlags& flags);

/// The molecule `name` (configs/molecules name or file) with the flags' charge and spin, checked.
/// @throws InputError naming the flags where the charge or spin is impossible.
System load_molecule_with_state(const std::string& name, const MoleculeStateFlags& flags);

/// Sets options.guess and options.stability from the text. @throws InputError naming
/// `command`'s flag
void apply_scf_flags(const ScfFlagText& text, scf::ScfOptions& options, const std::string& command);

}  // namespace nnvmc::app
