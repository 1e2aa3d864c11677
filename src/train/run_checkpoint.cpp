#include "train/run_checkpoint.hpp"

#include <algorithm>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "core/errors.hpp"
#include "core/log.hpp"
#include "io/directory_lock.hpp"
#include "io/output_kind.hpp"
#include "parallel/communicator.hpp"
#include "train/checkpoint.hpp"

namespace nnvmc {

std::string run_checkpoint(const std::string& what, const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) return path;
  const std::string where = what + " " + path;
  if (!fs::is_directory(path, ec)) throw CheckpointError(where + ": no such file or directory (no checkpoint)");
  const fs::path ckpt = fs::path(path) / "checkpoint.h5";
  if (fs::exists(ckpt, ec)) return ckpt.string();
  std::string below;
  for (const auto& entry : fs::directory_iterator(path, ec))
    if (fs::exists(entry.path() / "checkpoint.h5", ec))
      below += (below.empty() ? "" : ", ") + entry.path().string();
  if (!below.empty())
    throw CheckpointError(where + ": no checkpoint.h5 here; runs below it: " + below + " (name the one you mean)");
  // a comparison's directory: its cells are runs (it said "no checkpoint.h5 here" alone: a user audit)
  if (const fs::path cells = fs::path(path) / "cells"; fs::is_directory(cells, ec)) {
    std::vector<std::string> runs;
    for (const auto& entry : fs::directory_iterator(cells, ec))
      if (fs::exists(entry.path() / "checkpoint.h5", ec)) runs.push_back(entry.path().string());
    std::sort(runs.begin(), runs.end());
    if (!runs.empty()) {
      std::string listed;
      for (std::size_t i = 0; i < runs.size() && i < 8; ++i) listed += (i ? ", " : "") + runs[i];
      if (runs.size() > 8) listed += ", and " + std::to_string(runs.size() - 8) + " more";
      throw CheckpointError(where + ": a comparison (nnvmc compare), not a run; its cells are runs: " + listed +
                            " (name the one you mean)");
    }
  }
  if (fs::exists(fs::path(path) / kOlderCheckpointName, ec))
    throw CheckpointError(where + ": no checkpoint.h5, but the one before it, " + kOlderCheckpointName +
                          ", is there: rename it to checkpoint.h5 to continue from it");
  if (fs::exists(fs::path(path) / "checkpoint.h5.previous", ec))
    throw CheckpointError(where + ": no checkpoint.h5; the run there was set aside as *.previous by a --force start "
                          "that ended before its first checkpoint: to use that run, rename its *.previous files "
                          "back (drop the suffix)");
  // a run that has not written its first checkpoint yet, in another process (it read "no checkpoint.h5")
  if (std::string pid; io::lock_held(path, &pid))
    throw InputError(where + ": in use by another nnvmc process" + (pid.empty() ? "" : " (pid " + pid + ")") +
                     ", which has not written its first checkpoint yet; wait for it to finish");
  if (fs::exists(fs::path(path) / "checkpoint.h5.tmp", ec))
    throw CheckpointError(where + ": no complete checkpoint.h5 (only an unfinished checkpoint.h5.tmp: the run "
                          "stopped before its first checkpoint; start it again with --force)");
  // (a run killed before its first checkpoint, by a second Ctrl-C: "no checkpoint.h5 here" alone
  // did not say that it can start over, a user audit)
  // (only a run's own config.yaml, of a run that did not finish: a finished run whose checkpoint
  // was deleted would be replaced by a start over, a review)
  if (const std::string config = (fs::path(path) / "config.yaml").string();
      io::is_run_config(config) && !fs::exists(fs::path(path) / "summary.json", ec))
    throw CheckpointError(where + ": no checkpoint.h5 here: the run in it ended before its first checkpoint; start "
                          "it over with 'nnvmc train " + config + " run.output=" + path + "'");
  throw CheckpointError(where + ": no checkpoint.h5 here");
}

std::string readable_checkpoint(const std::string& what, const std::string& checkpoint, Checkpoint* loaded) {
  namespace fs = std::filesystem;
  try {
    Checkpoint c = load_checkpoint(checkpoint);
    if (loaded) *loaded = std::move(c);
    return checkpoint;
  } catch (const CheckpointError& damaged) {
    // (a file of a newer format, or not a file at all, is not damage: nothing falls back then)
    const std::string reason = damaged.what();
    if (reason.find("checkpoint format version") != std::string::npos || reason.find("not a regular file") != std::string::npos)
      throw;
    std::error_code ec;
    const fs::path older = fs::path(checkpoint).parent_path() / kOlderCheckpointName;
    if (fs::path(checkpoint).filename() != "checkpoint.h5" || !fs::exists(older, ec)) throw;
    Checkpoint c;
    try {
      c = load_checkpoint(older.string());
    } catch (const CheckpointError&) {
      throw damaged;
    }
    log::warn(strfmt("%s: %s; the checkpoint before it, %s of iteration %lld, is used", what.c_str(), damaged.what(),
                     older.string().c_str(), static_cast<long long>(c.iteration)));
    if (loaded) *loaded = std::move(c);
    return older.string();
  }
}

void require_same_checkpoint_on_all_ranks(const Checkpoint& c, const std::string& what) {
  if (parallel::world().size() == 1) return;
  const std::string text = strfmt("iteration %lld, checksum %s", static_cast<long long>(c.iteration), c.checksum.c_str());
  const std::string difference = parallel::first_difference_across_ranks(parallel::world(), text);
  if (!difference.empty())
    throw InputError(what + ": the ranks of this run read different checkpoints: " + difference +
                     " (every rank must read the same file: copies of a run's directory on each node must be the same "
                     "copy)");
}

}  // namespace nnvmc
