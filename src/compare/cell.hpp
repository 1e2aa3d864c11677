#pragma once
/// @file cell.hpp
/// One cell of a comparison, run in its own process (`nnvmc compare-cell DIR`): trains the run
/// config DIR/cell.yaml (continuing from DIR/checkpoint.h5 when there is one), evaluates, and
/// writes DIR/cell.json with the status and every number the comparison's table needs.
#include <cstdint>
#include <string>

namespace nnvmc::compare {

/// Exit codes of `nnvmc compare-cell`.
enum CellExit : int { cell_done = 0, cell_failed = 1, cell_interrupted = 3 };

/// Testing hooks and the memory share of one cell run (the time budget is the cell config's
/// optim.minutes).
struct CellRunOptions {
  std::int64_t interrupt_at = -1;  ///< testing: stop as SIGTERM would before this iteration (−1: never)
  /// When > 0 and the cell runs on the CPU with run.memory_budget "auto": this many bytes
  /// instead (the comparison's share of memory for the cells running at once; 0: the cell's own "auto").
  std::int64_t auto_memory_bytes = 0;
  /// When > 1 and the cell runs on a CUDA device with run.memory_budget "auto": the cells running
  /// at once on this machine, which share the GPU and each take this share of its 'auto'.
  int cuda_sharers = 1;
};

/// Runs the cell in directory `dir` and writes `dir`/cell.json: status ("done", "failed" with
/// the reason, or "interrupted"), energy ± error, variance, autocorrelation time, parameters,
/// training seconds per iteration and stage, peak tensor memory, peak resident memory, wall time
/// in this process (the runner replaces it by the wall time of the cell's processes).
/// Never throws: failures are recorded. @return a CellExit code
int run_cell(const std::string& dir, const CellRunOptions& options);

}  // namespace nnvmc::compare
