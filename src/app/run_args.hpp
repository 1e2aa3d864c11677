#pragma once
/// @file run_args.hpp
/// Splitting "CONFIG key=value ..." positional arguments.
#include <string>
#include <vector>

namespace nnvmc::app {

/// Positional arguments: an optional leading file (no '=') and key.path=value overrides.
struct RunArgs {
  std::string file;                    ///< config or checkpoint path (may be empty)
  std::vector<std::string> overrides;  ///< key.path=value
};

/// @throws InputError for a second file argument or an override key given twice.
RunArgs split_run_args(const std::vector<std::string>& args);

}  // namespace nnvmc::app
