#pragma once
/// @file run_name.hpp
/// The check of run.name, which names a new run's directory through run.output's <name>.
#include <string>

namespace nnvmc {

/// @throws ConfigError naming run.name when `name` is a path ('../x' wrote outside run.output)
/// rather than a plain name. (Checked where runs start from a file, load_config, and on a resume
/// that changes it; not in validate(): a checkpoint's config is read as recorded.)
void check_run_name(const std::string& name);

}  // namespace nnvmc
