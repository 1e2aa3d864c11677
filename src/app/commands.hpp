#pragma once
/// @file commands.hpp
/// One function per subcommand (one file each): adds the subcommand to the CLI.
/// Each callback runs the command; library errors propagate to main(), which maps
/// InputError → exit 2 and other errors → exit 1.
#include <CLI/CLI.hpp>

namespace nnvmc::app {

void add_train_command(CLI::App& app);  ///< nnvmc train CONFIG [key=value ...] [--resume DIR]
void add_eval_command(CLI::App& app);   ///< nnvmc eval CHECKPOINT [--steps N] ... [--json]
void add_scf_command(CLI::App& app);    ///< nnvmc scf MOLECULE [--basis B] [--uhf] [--json]
void add_ccsd_command(CLI::App& app);
void add_compare_command(CLI::App& app);  ///< nnvmc compare COMPARE.yaml [key=value ...] [--jobs K] (+ compare-cell)
void add_profile_command(CLI::App& app);  ///< nnvmc profile CONFIG [--molecules a,b] [--iterations N] [key=value ...]   ///< nnvmc ccsd MOLECULE [--basis B] [--cholesky TAU] ... [--triples] [--json]

}  // namespace nnvmc::app
