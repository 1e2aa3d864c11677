#pragma once
/// @file run_args.hpp
/// Splitting "CONFIG key=value ..." positional arguments; a checkpoint's molecules as a setting.
#include <string>
#include <vector>

#include "train/run_checkpoint.hpp"

namespace nnvmc {
struct Checkpoint;
struct Config;
}

namespace nnvmc::app {

/// Positional arguments: an optional leading file (no '=') and key.path=value overrides.
struct RunArgs {
  std::string file;                    ///< config or checkpoint path (may be empty)
  std::vector<std::string> overrides;  ///< key.path=value
};

/// @throws InputError for a second file argument or an override key given twice.
RunArgs split_run_args(const std::vector<std::string>& args);

using nnvmc::run_checkpoint;  // (train/run_checkpoint.hpp)

/// @throws ConfigError for an unknown model.type, naming the file and line or the override that
/// gave it (the registry's own message names neither).
void check_model_type(const Config& config, const RunArgs& ra);

/// The checkpoint's molecules as a system.molecules value (inline atoms in bohr, names, charge,
/// spin): evaluating or resuming a run needs neither its molecule files nor the directory it ran in.
std::string checkpoint_molecules(const Checkpoint& c);

}  // namespace nnvmc::app
