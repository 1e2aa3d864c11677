#pragma once
/// @file run_args.hpp
/// Splitting "CONFIG key=value ..." positional arguments; finding a run's checkpoint.
#include <string>
#include <vector>

namespace nnvmc {
struct Checkpoint;
}

namespace nnvmc::app {

/// Positional arguments: an optional leading file (no '=') and key.path=value overrides.
struct RunArgs {
  std::string file;                    ///< config or checkpoint path (may be empty)
  std::vector<std::string> overrides;  ///< key.path=value
};

/// @throws InputError for a second file argument or an override key given twice.
RunArgs split_run_args(const std::vector<std::string>& args);

/// The checkpoint of a run named by `path`: the file itself, or a run's output directory's
/// checkpoint.h5. `what` starts the error messages ("--resume", "eval").
/// @throws CheckpointError when there is none — naming the runs below `path` when it holds only
/// those, or saying why a run there has no checkpoint (set aside by --force, or unfinished).
std::string run_checkpoint(const std::string& what, const std::string& path);

/// The checkpoint's molecules as a system.molecules value (inline atoms in bohr, names, charge,
/// spin): evaluating or resuming a run needs neither its molecule files nor the directory it ran in.
std::string checkpoint_molecules(const Checkpoint& c);

}  // namespace nnvmc::app
