/// nnvmc compare COMPARE.yaml [key=value ...] [--jobs K] [--retry-failed] [--max-cells N] [--no-plots] [--list]
/// nnvmc compare-cell DIR [--interrupt-at T] [--auto-memory BYTES]   (one cell; started by `compare`)
#include <sys/prctl.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <thread>

#include "app/commands.hpp"
#include "app/run_args.hpp"
#include "batching/budget.hpp"
#include "compare/cell.hpp"
#include "compare/listing.hpp"
#include "compare/outputs.hpp"
#include "compare/reference.hpp"
#include "compare/runner.hpp"
#include "compare/spec.hpp"
#include "core/errors.hpp"
#include "core/log.hpp"
#include "core/process.hpp"
#include "io/created_directories.hpp"
#include "io/directory_lock.hpp"
#include "io/output_kind.hpp"
#include "models/registry.hpp"
#include "parallel/communicator.hpp"

namespace nnvmc::app {

namespace {

struct CompareArgs {
  std::vector<std::string> args;
  int jobs = 1;
  int max_cells = 0;
  bool retry_failed = false, no_plots = false;
  bool list = false;  ///< print the cells, their states and the references; run nothing
  std::string test_interrupt;  ///< CELL_ID:ITERATION
};

void check_models(const compare::CompareSpec& spec) {
  const auto names = model_registry().names();
  for (const auto& cell : spec.cells)
    if (std::find(names.begin(), names.end(), cell.config.model.type) == names.end()) {
      std::string all;
      for (const auto& n : names) all += (all.empty() ? "" : ", ") + n;
      throw ConfigError(spec.source + ": ansatz '" + cell.ansatz + "': unknown 'model.type' '" +
                        cell.config.model.type + "' (known: " + all + ")");
    }
}

/// A comparison does not write into a training run's or a profile's directory (nor lists one as
/// its cells). @throws InputError naming `output` and what marks the run or profile
void refuse_training_run_output(const compare::CompareSpec& spec) {
  if (io::is_filesystem_root(spec.output))
    throw InputError("output: '" + spec.output + "' is the filesystem's root directory; choose another output");
  if (const std::string marker = io::training_run_marker(spec.output); !marker.empty())
    throw InputError("output: '" + spec.output + "' holds a training run (" + marker +
                     "), not a comparison; choose another output");
  if (const std::string marker = io::profile_marker(spec.output); !marker.empty())  // (its report.md was replaced)
    throw InputError("output: '" + spec.output + "' holds a profile (" + marker +
                     "), not a comparison; choose another output");
  if (const std::string outer = io::enclosing_output(spec.output); !outer.empty())  // (e.g. a profile's runs/)
    throw InputError("output: '" + spec.output + "' lies in a " + outer + "; choose another output");
}

void run_compare(const CompareArgs& a) {
  const auto t0 = std::chrono::steady_clock::now();
  const RunArgs ra = split_run_args(a.args);
  if (ra.file.empty()) throw InputError("compare: give a COMPARE.yaml file");
  if (a.jobs < 1) throw InputError("--jobs must be >= 1");
  const compare::CompareSpec spec = compare::load_compare_spec(ra.file, ra.overrides);
  check_models(spec);
  if (a.list) {  // (reads the output directory, probes its locks for a moment, writes nothing)
    refuse_training_run_output(spec);
    if (parallel::world().is_root()) std::cout << compare::list_comparison(spec, compare::known_references(spec));
    return;
  }
  // Under mpirun the cells are shared out over the ranks (each rank runs its cells, `--jobs` at
  // a time, as one-process children); rank 0 prepares the directories and writes the table.
  auto& world = parallel::world();
  const bool root = world.is_root();
  compare::RunnerOptions o;
  o.jobs = a.jobs;
  o.rank = world.rank();
  o.ranks = world.size();
  o.local_ranks = std::max(1, world.local_size());
  o.threads_per_cell =
      std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / (a.jobs * o.local_ranks));
  // This node's ranks share its memory: each rank's cells running at once split its share.
  if (const auto share = batching::host_memory().share(o.local_ranks); share > 0)
    o.auto_memory_total = static_cast<std::int64_t>(batching::MemoryBudget::kAutoFraction * double(share));
  o.retry_failed = a.retry_failed;
  o.max_cells = a.max_cells;
  o.executable = self_executable();
  if (!a.test_interrupt.empty()) {
    const auto colon = a.test_interrupt.rfind(':');
    if (colon == std::string::npos) throw InputError("--test-interrupt wants CELL_ID:ITERATION");
    o.interrupt_cell = a.test_interrupt.substr(0, colon);
    o.interrupt_at = std::stoll(a.test_interrupt.substr(colon + 1));
  }
  // (this node's ranks each run --jobs cells: a user audit saw 2 ranks x 2 threads on 2 cores pass unwarned)
  if (spec.threads && root &&
      spec.threads * a.jobs * o.local_ranks > static_cast<int>(std::thread::hardware_concurrency()))
    log::warn(strfmt("%s%d jobs x %d threads exceed the %u cores: cells will slow each other down",
                     o.local_ranks > 1 ? strfmt("%d ranks on this node x ", o.local_ranks).c_str() : "", a.jobs,
                     spec.threads, std::thread::hardware_concurrency()));
  io::DirectoryLock lock;  // one comparison at a time writes this output (rank 0 writes it)
  // A comparison refused before its cells are prepared leaves the output as it was: the lock
  // file and the directory go again when this start made them (and nothing else is in it).
  io::CreatedDirectories made_dirs;
  bool made_lock_file = false;
  const auto undo_new_output = [&] {
    std::error_code ec;
    if (made_lock_file) std::filesystem::remove(std::filesystem::path(spec.output) / io::kLockFileName, ec);
    made_dirs.remove_if_empty();
  };
  std::vector<compare::Reference> references;
  try {
    if (root) {
      std::error_code ec;
      made_dirs = io::CreatedDirectories::create(spec.output, ec);
      if (ec) throw InputError("output: cannot create directory '" + spec.output + "': " + ec.message());
      lock = io::DirectoryLock(spec.output, "output");
      made_lock_file = lock.created();  // (a start refused as "in use" removes nothing)
      refuse_training_run_output(spec);
      compare::check_cells(spec);  // before anything is computed or written
    }
    references = compare::compute_references(spec);  // every rank: CCSD(T) is shared out
  } catch (...) {
    if (root) undo_new_output();  // (the lock, still held, is released after)
    throw;
  }
  if (root) o.retried = compare::prepare_cells(spec, o);
  world.barrier();
  compare::RunSummary summary = compare::run_cells(spec, o);
  if (world.size() > 1) {  // the counts of all ranks' cells
    double counts[5] = {double(summary.done), double(summary.failed), double(summary.ran),
                        summary.interrupted ? 1.0 : 0.0, double(summary.killed)};
    world.allreduce_sum(counts, 5);
    summary = {int(counts[0]), int(counts[1]), int(counts[2]), counts[3] > 0, int(counts[4])};
    if (!root) return;  // rank 0 writes the table and reports the outcome (its exit code is the job's)
  }
  compare::ReportInfo info;
  info.jobs = a.jobs;
  info.threads_per_cell = o.threads_per_cell;
  info.plots = !a.no_plots;
  info.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string table = compare::write_outputs(spec, references, info);
  std::fputs(table.c_str(), stdout);  // the result on stdout, as train's and eval's (report.md: the whole table)
  std::fflush(stdout);
  const int total = static_cast<int>(spec.cells.size());
  log::info(strfmt("%d of %d cells done, %d failed; table and report in %s (%.1f s)", summary.done, total,
                   summary.failed, spec.output.c_str(), info.wall_seconds));
  if (const std::string note = compare::cells_not_in_spec_note(spec); !note.empty()) log::warn(note);
  if (summary.interrupted)
    throw Error(strfmt("interrupted with %d of %d cells done; re-run the same command to continue",
                       summary.done + summary.failed, total));
  if (summary.killed > 0)
    throw Error(strfmt("%d cell%s stopped from outside (killed: the out-of-memory killer, a scheduler or a user), "
                       "%d of %d done; re-run the same command to continue %s from %s checkpoint%s",
                       summary.killed, summary.killed == 1 ? "'s process was" : "s' processes were", summary.done,
                       total, summary.killed == 1 ? "it" : "them", summary.killed == 1 ? "its" : "their",
                       summary.killed == 1 ? "" : "s"));
  if (summary.failed > 0) {  // (it said "the others completed" when none had, or some were not run)
    for (const auto& line : compare::other_ranks_failures(spec)) log::error("FAILED " + line);
    const int not_run = total - summary.done - summary.failed;
    throw Error(strfmt("%d of %d cell%s failed (reasons in %s/report.md), %d done%s; once the cause is fixed, "
                       "the same command with --retry-failed runs the failed cells again",
                       summary.failed, total, total == 1 ? "" : "s", spec.output.c_str(), summary.done,
                       not_run > 0 ? strfmt(", %d not run yet (--max-cells)", not_run).c_str() : ""));
  }
  if (summary.done + summary.failed < total)
    log::info(strfmt("%d cells not run yet (--max-cells); re-run the same command to continue",
                     total - summary.done - summary.failed));
}

}  // namespace

void add_compare_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("compare", "Compare ansätze across molecules (a matrix of training runs)");
  auto a = std::make_shared<CompareArgs>();
  cmd->add_option("args", a->args, "COMPARE.yaml followed by key=value overrides of the file");
  cmd->add_option("--jobs", a->jobs, "cells run at once (threads are split between them)")
      ->check(integer_in(1, INT_MAX));
  cmd->add_option("--max-cells", a->max_cells, "start at most N cells now, 0: all (re-run to continue)")
      ->check(integer_in(0, INT_MAX));
  cmd->add_flag("--retry-failed", a->retry_failed, "run failed cells again");
  cmd->add_flag("--no-plots", a->no_plots, "do not run the plotting script");
  cmd->add_flag("--list", a->list,
                "list the cells (state, budget, outcome so far) and the references, and stop: nothing is run or written");
  cmd->add_option("--test-interrupt", a->test_interrupt, "testing: CELL_ID:ITERATION stops that cell as SIGTERM would")
      ->group("");
  cmd->callback([a] { run_compare(*a); });

  // One cell in its own process: the runner starts it; a user may too, to rerun a cell by hand.
  auto* cell = app.add_subcommand("compare-cell", "run one cell of a comparison (started by `compare`)");
  cell->group("");
  auto dir = std::make_shared<std::string>();
  auto opts = std::make_shared<compare::CellRunOptions>();
  cell->add_option("dir", *dir, "the cell's directory (holds cell.yaml)")->required();
  cell->add_option("--interrupt-at", opts->interrupt_at, "testing: stop before this iteration")
      ->check(integer_in(-1, LLONG_MAX));
  cell->add_option("--auto-memory", opts->auto_memory_bytes, "bytes that run.memory_budget 'auto' stands for (CPU)")
      ->check(at_least(0));
  cell->add_option("--cuda-sharers", opts->cuda_sharers, "cells sharing the GPU: run.memory_budget 'auto' is 1/N of its")
      ->check(integer_in(1, 1 << 20));
  cell->callback([dir, opts] {
    prctl(PR_SET_PDEATHSIG, SIGTERM);  // the comparison was killed: checkpoint and stop
    std::exit(compare::run_cell(*dir, *opts));
  });
}

}  // namespace nnvmc::app
