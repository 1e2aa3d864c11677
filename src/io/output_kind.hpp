#pragma once
/// @file output_kind.hpp
/// What an output directory already holds, so that `nnvmc train`, `nnvmc compare` and `nnvmc
/// profile` refuse to write into each other's directories (their files would mix: a run's
/// checkpoint beside a comparison's table, a comparison's cells inside a run, a profile's
/// report.md over a comparison's). Only files that these commands
/// write together count, so a user's own folder (a result.h5, a folder called cells) is neither.
#include <string>
#include <vector>

namespace nnvmc::io {

/// What marks `dir` as a training run's directory: "checkpoint.h5" (or, set aside by --force,
/// "checkpoint.h5.previous" or "summary.json.previous"), or "config.yaml and summary.json" / "config.yaml and result.h5"
/// (a run that ended or started without a checkpoint); "" when none of them is there.
std::string training_run_marker(const std::string& dir);

/// The first line of the config.yaml a training run writes: what marks the file as the run's.
inline constexpr const char* kRunConfigHeader =
    "# nnvmc train: the settings of this run, every key resolved (nnvmc train --resume DIR continues it)";

/// Whether the file at `path` begins with kRunConfigHeader.
bool is_run_config(const std::string& path);

/// The files in `dir` named as a training run's ("config.yaml", "result.h5") that no nnvmc run
/// wrote, which a new run there would replace or, failing early, remove: a config.yaml without
/// kRunConfigHeader (unless a run's result.h5 is beside it: a start killed before its first
/// checkpoint by an nnvmc that wrote no header), a result.h5 without a run id. A user ran their
/// own config.yaml with run.output '.', and a failed start deleted it (a user audit).
std::vector<std::string> foreign_run_files(const std::string& dir);

/// What marks `dir` as a comparison's output: "compare.csv", "compare.h5", a cell's
/// "cells/<id>/cell.yaml", or "cells (unreadable)" when a cells/ there cannot be listed; ""
/// when none of them is there.
std::string comparison_marker(const std::string& dir);

/// The file that marks a run directory under a profile's <output>/runs/ as the profile's own
/// scratch run, which a later profile replaces. A training run started there (--force) removes it.
inline constexpr const char* kProfileScratchMarker = "profile_scratch.txt";

/// What marks `dir` as a profile's output (nnvmc profile): "profile.json" or "profile.h5"; ""
/// when neither is there.
std::string profile_marker(const std::string& dir);

/// What marks the nearest directory above `dir` (its parent, grandparent, ...) that is a
/// comparison's or a profile's output, as "comparison (compare.csv) in '<dir>'" or "profile
/// (profile.json) in '<dir>'"; "" when none is. A comparison's or profile's output inside
/// another one's (cells/, cells/<id>/..., runs/) would mix their files and listings. Symbolic
/// links in `dir` are followed.
std::string enclosing_output(const std::string& dir);

/// Whether `dir` is the filesystem's root directory (symbolic links followed): no command writes
/// its files there (a run with run.output '/' wrote config.yaml and checkpoint.h5 into / as root:
/// a user audit).
bool is_filesystem_root(const std::string& dir);

}  // namespace nnvmc::io
