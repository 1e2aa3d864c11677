#pragma once
/// @file runner.hpp
/// Runs the cells of a comparison, each as a child process `nnvmc compare-cell DIR` (so cells
/// share no global state: RNG, thread pools, allocator counts), K at a time. Resumable: a cell
/// whose cell.json says done (or failed) is not run again; one with a checkpoint continues from
/// it. SIGINT/SIGTERM are passed on to running cells, which checkpoint; nothing new starts.
/// Torch-free.
#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "compare/spec.hpp"

namespace nnvmc::compare {

/// The warning a comparison gives when `other_tasks` runnable tasks besides itself (at its
/// start) fill its `cpus`: the cells' timings, and with a minutes budget how far they train,
/// would depend on that load (a user audit: 8x slower per iteration on a busy machine). "" else.
std::string busy_machine_warning(int other_tasks, int cpus, bool minutes_budget);

/// How to run the cells.
struct RunnerOptions {
  int jobs = 1;                   ///< cells run at once
  int threads_per_cell = 1;       ///< run.threads of each cell unless the file sets threads
  /// The memory "auto" stands for across this process's cells running at once (0: each cell
  /// takes its own "auto"). When more than one cell runs at once on the node (this
  /// process's min(jobs, cells to run), times the node's ranks), each is passed its share as
  /// CellRunOptions::auto_memory_bytes.
  std::int64_t auto_memory_total = 0;
  bool retry_failed = false;      ///< run failed cells again (from scratch)
  std::set<std::string> retried;  ///< ids of the failed cells prepare_cells cleared to retry
  int max_cells = 0;              ///< start at most this many cells in this invocation (0: all)
  std::string executable;         ///< the nnvmc executable
  std::string interrupt_cell;     ///< testing: this cell stops as SIGTERM would ...
  std::int64_t interrupt_at = -1;  ///< ... before this iteration
  /// Under mpirun the cells are shared out: of the cells to run (numbered in the file's order,
  /// the first max_cells of them), this process runs the k-th when k % ranks == rank (each as a
  /// one-process child, without the launcher's OMPI_/PMIX_/PMI_ variables).
  int rank = 0;
  int ranks = 1;
  int local_ranks = 1;  ///< ranks on this node: they share its cores, memory and GPU
};

/// Counts after a run.
struct RunSummary {
  int done = 0;          ///< cells done (now or before)
  int failed = 0;        ///< cells failed (now or before)
  int ran = 0;           ///< cells started in this invocation
  bool interrupted = false;  ///< stopped by a signal (or the testing hook); re-run to continue
  /// cells whose own process was stopped from outside (SIGKILL, e.g. the OOM killer or a
  /// scheduler; SIGTERM, SIGINT, SIGHUP past their handler): marked interrupted, so that a re-run
  /// continues them from their checkpoint (they were failed, and --retry-failed trained them
  /// from the start again: a user audit)
  int killed = 0;
};

/// State of a cell on disk: "new", "started" (has a checkpoint), "done", "failed", "interrupted".
std::string cell_state(const Cell& cell);

/// One line per failed cell that a rank other than 0 ran ("ID (rank R): REASON"), read from the
/// cells' files: under mpirun only rank 0's cells' failures reach the console as they happen.
std::vector<std::string> other_ranks_failures(const CompareSpec& spec);

/// Whether a done cell now has more iterations than it trained and either ended on its
/// iterations, or stopped on the clock (optim.minutes) and now has more minutes than its clock
/// shows (or none, i.e. no limit): a comparison re-run with the larger budget continues it from
/// its checkpoint. A continuation that fails leaves the cell done
/// with its earlier result (cell.json: continuation_failed). (A cell.json from before
/// 2026-12-05 records no minutes: false.)
bool needs_more_training(const Cell& cell);

/// The iterations a done or interrupted cell trained (cell.json `iterations`; an interrupted
/// one's may pass its checkpoint by up to run.checkpoint_every), −1 for any other cell. A done
/// cell given more iterations than that continues from its checkpoint (needs_more_training);
/// fewer are refused (check_cells; a review: an interrupted cell past them was evaluated there).
std::int64_t trained_iterations(const Cell& cell);

/// A done or interrupted cell that trained longer than the minutes budget now given (with a
/// smaller one than it ran under): its minutes, and the least budget a comparison may give it.
struct MinutesPastBudget {
  double trained = 0;       ///< minutes of training
  double least_budget = 0;  ///< its budget then, or its minutes rounded up
};
std::optional<MinutesPastBudget> minutes_past_budget(const Cell& cell);

/// Whether the cell holds progress that a changed configuration must not replace: done, or a
/// checkpoint (started, or interrupted after its first); one interrupted before it starts again.
bool has_progress(const Cell& cell);

/// Whether the cell's directory holds a run of another configuration (its cell.yaml differs, or
/// cannot be read); false when the directory has none yet.
bool holds_other_configuration(const Cell& cell);

/// How the configuration in the cell's directory differs from the cell's ("optim.iterations 5
/// -> 6, ..."), or why it cannot be read; for a cell that holds_other_configuration.
std::string configuration_change(const Cell& cell);

/// What the cell's cell.json says of its end, as the progress line prints it ("done, E = … ±
/// … Eh, 12.0 s", "FAILED: reason", "interrupted, …"); "" when it has not ended yet.
std::string cell_outcome(const Cell& cell);

/// Checks every cell directory against its cell's config, writing nothing: a directory holding
/// a different run (other than a failed or never-checkpointed one) is an InputError naming
/// the cell.
void check_cells(const CompareSpec& spec);

/// Clears cell directories holding another configuration (failed or never checkpointed; see
/// check_cells) and failed ones when retrying, then writes each cell's cell.yaml.
/// @returns the ids of the failed cells cleared to retry (for RunnerOptions::retried)
std::set<std::string> prepare_cells(const CompareSpec& spec, const RunnerOptions& options);

/// Runs the cells not yet done (of this rank: see RunnerOptions::rank; which cells are done,
/// failed or to run is rank 0's reading of their files, shared with every rank, so that no two
/// ranks take one cell); the counts are of this rank's cells (a cell not run now is counted by
/// the rank i % ranks). Prints one line per finished cell; cell.json records `runner_rank`.
RunSummary run_cells(const CompareSpec& spec, const RunnerOptions& options);

}  // namespace nnvmc::compare
