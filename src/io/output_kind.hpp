#pragma once
/// @file output_kind.hpp
/// What an output directory already holds, so that `nnvmc train` and `nnvmc compare` refuse to
/// write into each other's directories (their files would mix: a run's checkpoint beside a
/// comparison's table, or a comparison's cells/ inside a run).
#include <string>

namespace nnvmc::io {

/// The file that marks `dir` as a training run's directory (checkpoint.h5, summary.json or
/// result.h5, also set aside as *.previous), or "" when there is none.
std::string training_run_marker(const std::string& dir);

/// The entry that marks `dir` as a comparison's output (compare.h5, compare.csv, references.json
/// or the cells/ directory), or "" when there is none.
std::string comparison_marker(const std::string& dir);

}  // namespace nnvmc::io
