#include "compare/runner.hpp"

#include <signal.h>
#include <sys/types.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "compare/cell.hpp"
#include "core/config_diff.hpp"
#include "core/errors.hpp"
#include "core/log.hpp"
#include "core/process.hpp"
#include "io/atomic_file.hpp"
#include "parallel/communicator.hpp"
#include "core/json_text.hpp"

namespace nnvmc::compare {
namespace fs = std::filesystem;

namespace {

volatile std::sig_atomic_t g_signal = 0;
void on_signal(int sig) { g_signal = sig; }

/// Installs SIGINT/SIGTERM/SIGHUP handlers for its lifetime (no SA_RESTART: waits return on a signal).
class SignalGuard {
 public:
  SignalGuard() {
    g_signal = 0;
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
    // a closed terminal stops the comparison as SIGTERM does (unless nohup ignores it)
    sigaction(SIGHUP, nullptr, &old_hup_);
    if (old_hup_.sa_handler != SIG_IGN) sigaction(SIGHUP, &sa, nullptr);
  }
  ~SignalGuard() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
    sigaction(SIGHUP, &old_hup_, nullptr);
  }

 private:
  struct sigaction old_int_ {}, old_term_ {}, old_hup_ {};
};

nlohmann::json read_status(const std::string& dir) {
  std::ifstream in(dir + "/cell.json");
  if (!in) return nlohmann::json::object();
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception&) {
    return nlohmann::json::object();
  }
}

std::string dir_of(const Cell& c) { return c.config.run.output; }

Config with_threads(const Cell& cell, const CompareSpec& spec, const RunnerOptions& o) {
  Config c = cell.config;
  if (spec.threads == 0 && c.run.threads == 0) c.run.threads = o.threads_per_cell;  // an explicit run.threads holds
  return c;
}

std::string finished_line(const Cell& cell, const nlohmann::json& j) {
  const std::string status = j.value("status", "unknown");
  if (status == "failed") return "FAILED: " + j.value("reason", std::string("?"));
  std::string s = status;
  if (j.contains("energy") && j["energy"].is_number())
    s += strfmt(", E = %.6f ± %.6f Eh", j["energy"].get<double>(), j.value("energy_err", NAN));
  s += strfmt(", %.1f s", j.value("wall_seconds", 0.0));
  if (j.contains("continuation_failed") && j["continuation_failed"].is_string())
    s += "; its continuation failed: " + j["continuation_failed"].get<std::string>();
  return s;
}

}  // namespace

std::string busy_machine_warning(int other_tasks, int cpus, bool minutes_budget) {
  if (cpus < 1 || other_tasks < cpus) return "";
  return strfmt("compare: the machine is busy (%d other runnable task%s on the %d CPU%s this process may use): the "
                "cells' timings%s may depend on that load",
                other_tasks, other_tasks == 1 ? "" : "s", cpus, cpus == 1 ? "" : "s",
                minutes_budget ? ", and with a minutes budget how far they train," : "");
}

std::vector<std::string> other_ranks_failures(const CompareSpec& spec) {
  std::vector<std::string> lines;
  for (const auto& cell : spec.cells) {
    const auto j = read_status(dir_of(cell));
    if (j.value("status", "") != "failed" || j.value("runner_rank", 0) == 0) continue;
    lines.push_back(strfmt("%s (rank %d): %s", cell.id.c_str(), j.value("runner_rank", 0),
                           j.value("reason", std::string("?")).c_str()));
  }
  return lines;
}

std::string cell_state(const Cell& cell) {
  const std::string dir = dir_of(cell);
  const auto j = read_status(dir);
  const std::string status = j.value("status", "");
  if (status == "done" || status == "failed" || status == "interrupted") return status;
  if (fs::exists(dir + "/checkpoint.h5")) return "started";
  return "new";
}

namespace {
/// trained_iterations of a cell.json already read.
std::int64_t trained_iterations(const nlohmann::json& j) {
  const std::string status = j.value("status", "");
  return (status == "done" || status == "interrupted") && j.contains("iterations") && j["iterations"].is_number_integer()
             ? j["iterations"].get<std::int64_t>()
             : -1;
}
}  // namespace

std::int64_t trained_iterations(const Cell& cell) { return trained_iterations(read_status(dir_of(cell))); }

bool needs_more_training(const Cell& cell) {
  const auto j = read_status(dir_of(cell));
  if (j.value("status", "") != "done") return false;
  // More iterations than it trained: a cell that ended on its iterations trains on (a user audit:
  // a larger `iterations` was refused, the cells had to be trained again from the start)
  const std::int64_t trained = trained_iterations(j);
  if (trained >= 0 && cell.config.optim.iterations <= trained) return false;
  if (trained >= 0 && j.value("reached_iterations", false)) return true;
  if (j.value("reached_iterations", true) || !j.contains("minutes") || !j["minutes"].is_number()) return false;
  // (more minutes than the clock already shows: the last iteration may have run past the old budget)
  const double now = cell.config.optim.minutes;
  return now == 0 || (now > j["minutes"].get<double>() && 60 * now > j.value("train_seconds", 0.0));
}

std::optional<MinutesPastBudget> minutes_past_budget(const Cell& cell) {
  const auto j = read_status(dir_of(cell));
  const double now = cell.config.optim.minutes;
  const std::string status = j.value("status", "");
  // (an interrupted cell too: continued under a smaller budget it ends at once, done, and holds
  // that budget from then on)
  if (now <= 0 || (status != "done" && status != "interrupted")) return std::nullopt;
  const double held = j.contains("minutes") && j["minutes"].is_number() ? j["minutes"].get<double>() : 0;
  if (held > 0 && now >= held) return std::nullopt;  // (its own budget or more: its last iteration may run past the clock)
  const double trained = j.value("train_seconds", 0.0) / 60;
  if (trained <= now) return std::nullopt;
  return MinutesPastBudget{trained, held > 0 ? held : std::ceil(trained * 1000) / 1000};
}

bool holds_other_configuration(const Cell& cell) {
  const std::string path = dir_of(cell) + "/cell.yaml";
  if (!fs::exists(path)) return false;
  try {
    return cell_identity(load_config(path)) != cell_identity(cell.config);
  } catch (const ConfigError&) {
    return true;  // unreadable: a different run
  }
}

std::string cell_outcome(const Cell& cell) {
  const auto j = read_status(dir_of(cell));
  return j.value("status", "").empty() ? "" : finished_line(cell, j);
}

namespace {
/// Whether the cell's directory holds this configuration (true when there is none yet).
bool same_configuration(const Cell& cell) { return !holds_other_configuration(cell); }
}  // namespace

bool has_progress(const Cell& cell) {
  const std::string state = cell_state(cell);
  // an interrupted cell without a checkpoint (stopped in its pretraining or burn-in) starts again,
  // so it may start with other settings (it blocked them: a user audit)
  return state == "done" || state == "started" ||
         (state == "interrupted" && fs::exists(dir_of(cell) + "/checkpoint.h5"));
}

std::string configuration_change(const Cell& cell) {
  try {
    const Config held = load_config(dir_of(cell) + "/cell.yaml");
    const std::string changes = describe_changes(setting_changes(identity_settings(held), identity_settings(cell.config)));
    return changes.empty() ? "its settings differ" : changes;
  } catch (const ConfigError& e) {
    return std::string("its cell.yaml cannot be read: ") + e.what();
  }
}

void check_cells(const CompareSpec& spec) {
  for (const auto& cell : spec.cells) {
    if (!same_configuration(cell) && has_progress(cell))
      throw InputError("output '" + spec.output + "' already holds cell " + cell.id +
                       " run with a different configuration (" + configuration_change(cell) + "); delete " +
                       dir_of(cell) + " to redo it, or choose another output");
    if (const std::int64_t trained = trained_iterations(cell); trained > cell.config.optim.iterations)
      throw InputError(strfmt("output '%s' holds cell %s trained %lld iterations, more than the %d now given (a "
                              "trained cell cannot be untrained); give iterations %lld or more, or delete %s to redo "
                              "it, or choose another output",
                              spec.output.c_str(), cell.id.c_str(), static_cast<long long>(trained),
                              cell.config.optim.iterations, static_cast<long long>(trained), dir_of(cell).c_str()));
    // (the report would state the smaller budget for cells trained longer: a user audit)
    if (const auto past = minutes_past_budget(cell))
      throw InputError(strfmt("output '%s' holds cell %s %s after %.3g minutes of training, more than the %g now "
                              "given (a trained cell cannot be untrained); give minutes %g or more, or delete %s to "
                              "redo it, or choose another output",
                              spec.output.c_str(), cell.id.c_str(), cell_state(cell).c_str(), past->trained,
                              cell.config.optim.minutes,
                              past->least_budget, dir_of(cell).c_str()));
  }
}

std::set<std::string> prepare_cells(const CompareSpec& spec, const RunnerOptions& o) {
  check_cells(spec);
  std::set<std::string> retried;
  int to_run = 0;  // (numbered as run_cells numbers them: only the first --max-cells run now)
  for (const auto& cell : spec.cells) {
    const bool other = !same_configuration(cell);
    const std::string state = cell_state(cell);
    // (run_cells' kind_run: a done cell with more budget and its checkpoint, a failed one retried, any other)
    std::error_code ec;
    const bool runs = other || (state == "done" ? needs_more_training(cell) && fs::exists(dir_of(cell) + "/checkpoint.h5", ec)
                                                : state != "failed" || o.retry_failed);
    const bool now = runs && (o.max_cells == 0 || to_run < o.max_cells);
    to_run += runs;
    // a failed cell's record stays until it runs again (--max-cells left some for later: a user audit)
    const bool retry = !other && o.retry_failed && state == "failed" && now;
    if (retry) retried.insert(cell.id);
    if (other || retry) fs::remove_all(dir_of(cell));
  }
  for (const auto& cell : spec.cells) {
    const std::string dir = dir_of(cell);
    fs::create_directories(dir);
    io::write_text_atomically(dir + "/cell.yaml", to_yaml(with_threads(cell, spec, o)));
  }
  return retried;
}

RunSummary run_cells(const CompareSpec& spec, const RunnerOptions& o) {
  RunSummary summary;
  std::deque<const Cell*> queue;
  // Which cells are done, failed or to run is rank 0's reading of their files, shared with every
  // rank: a rank reading them itself could see another state (a cell another rank just finished,
  // a stale file on a network file system), number the cells to run differently, and run a cell
  // another rank runs too. The cells to run are numbered in the file's order, the first
  // --max-cells of them run now (in all, not per rank), and rank r takes every ranks-th of those;
  // a cell that needs no run is counted by rank (index % ranks).
  enum Kind : char { kind_run = 'r', kind_done = 'd', kind_stuck = 's', kind_failed = 'f' };
  std::string kinds(spec.cells.size(), kind_run);
  for (std::size_t i = 0; i < spec.cells.size(); ++i) {
    const Cell& cell = spec.cells[i];
    const std::string state = cell_state(cell);
    std::error_code ec;
    if (state == "done" && needs_more_training(cell))  // (a done cell with more minutes continues, if it can)
      kinds[i] = fs::exists(dir_of(cell) + "/checkpoint.h5", ec) ? kind_run : kind_stuck;
    else if (state == "done")
      kinds[i] = kind_done;
    else if (state == "failed" && !o.retry_failed)
      kinds[i] = kind_failed;
  }
  if (parallel::Communicator& comm = parallel::world(); comm.size() > 1) comm.broadcast(kinds.data(), kinds.size(), 0);
  const int ranks = std::max(1, o.ranks);
  std::map<const Cell*, int> number;  // 1-based position in the file, for the progress lines
  int pending = 0, done_all = 0, failed_all = 0;
  for (std::size_t i = 0; i < spec.cells.size(); ++i) {
    const Cell& cell = spec.cells[i];
    number[&cell] = static_cast<int>(i) + 1;
    const bool mine = static_cast<int>(i % static_cast<std::size_t>(ranks)) == o.rank;
    if (kinds[i] == kind_stuck) {
      // (it tried, and advised 'train --resume' or --force, neither of which a cell takes)
      if (mine)
        log::warn(strfmt("%s: done, but its checkpoint.h5 is gone, so it cannot train its new minutes; its result "
                         "stays (remove %s to train the cell again from the start)",
                         cell.id.c_str(), dir_of(cell).c_str()));
      ++done_all;
      if (mine) ++summary.done;
    } else if (kinds[i] == kind_done) {
      ++done_all;
      if (mine) ++summary.done;
    } else if (kinds[i] == kind_failed) {
      ++failed_all;
      if (mine) ++summary.failed;
    } else {
      if (o.retry_failed && cell_state(cell) == "failed") ++failed_all;  // (retried later: --max-cells)
      const int k = pending++;
      if (o.max_cells > 0 && k >= o.max_cells) continue;  // not now
      if (k % ranks != o.rank) continue;                   // another rank's
      queue.push_back(&cell);
    }
  }
  const int total = static_cast<int>(spec.cells.size());
  if (pending == 0) return summary;
  const int retried_all = static_cast<int>(o.retried.size());
  log::info(strfmt("%d of %d cells to run%s (%d done, %d failed before%s), %d at a time%s, %d threads each", pending,
                   total, o.max_cells > 0 && o.max_cells < pending ? strfmt(", %d of them now (--max-cells)", o.max_cells).c_str() : "",
                   done_all, failed_all + retried_all, retried_all > 0 ? strfmt(": %d retried", retried_all).c_str() : "",
                   o.jobs, ranks > 1 ? strfmt(" on each of %d ranks (this rank's cells are logged here)", ranks).c_str() : "",
                   spec.threads ? spec.threads : o.threads_per_cell));
  if (queue.empty()) return summary;
  if (o.rank == 0)  // (one warning, not one per rank; this process is single-threaded here)
    if (const std::string w = busy_machine_warning(runnable_tasks() - 1, available_cpus(), spec.minutes > 0); !w.empty())
      log::warn(w);
  // Cells that will run at once here; each takes its share of the memory 'auto' stands for.
  std::int64_t at_once = std::min<std::int64_t>(o.jobs, static_cast<std::int64_t>(queue.size()));
  if (o.max_cells > 0) at_once = std::min<std::int64_t>(at_once, o.max_cells);
  const std::int64_t auto_memory_per_cell =
      o.auto_memory_total > 0 && at_once * o.local_ranks > 1 ? o.auto_memory_total / std::max<std::int64_t>(at_once, 1) : 0;
  SignalGuard guard;
  struct Running {
    const Cell* cell;
    std::chrono::steady_clock::time_point start;
    double wall_before;  ///< wall seconds of the cell's earlier runs
  };
  std::map<pid_t, Running> running;
  bool stopping = false;
  int started = 0;
  const auto stop_all = [&] {
    if (!stopping) log::warn("stopping: running cells write checkpoints; re-run the same command to continue");
    stopping = true;
    for (const auto& [pid, r] : running) kill(pid, SIGTERM);
  };
  while (!queue.empty() || !running.empty()) {
    while (!stopping && !g_signal && !queue.empty() && static_cast<int>(running.size()) < o.jobs &&
           (o.max_cells == 0 || started < o.max_cells)) {
      const Cell* cell = queue.front();
      queue.pop_front();
      const int threads = spec.threads ? spec.threads : o.threads_per_cell;
      std::vector<std::string> argv{o.executable, "compare-cell", dir_of(*cell)};
      if (auto_memory_per_cell > 0) argv.insert(argv.end(), {"--auto-memory", std::to_string(auto_memory_per_cell)});
      // (cells are one-process children using the GPU their run.device names: all share it)
      if (at_once * o.local_ranks > 1)
        argv.insert(argv.end(), {"--cuda-sharers", std::to_string(at_once * o.local_ranks)});
      if (cell->id == o.interrupt_cell && o.interrupt_at >= 0)
        argv.insert(argv.end(), {"--interrupt-at", std::to_string(o.interrupt_at)});
      const std::string state = cell_state(*cell);
      std::error_code ec;
      const char* what = state == "new" ? "starting"
                         : fs::exists(dir_of(*cell) + "/checkpoint.h5", ec)
                             ? "continuing from its checkpoint"
                             : "starting again (it stopped before its first checkpoint)";
      log::info(strfmt("[%d/%d] %s: %s", number.at(cell), total, cell->id.c_str(), what));
      // (rank 0 makes the cell directories; another rank that cannot see them runs on another
      // filesystem, and its cells' files would never reach rank 0's table)
      if (std::error_code dir_ec; !fs::is_directory(dir_of(*cell), dir_ec))
        throw InputError(strfmt("compare: rank %d of %d cannot see the cell directory %s that rank 0 made: under "
                                "mpirun every rank must run in the same working directory on a filesystem all ranks "
                                "share", o.rank, ranks, dir_of(*cell).c_str()));
      // The child is a process of its own even when this one is an mpirun rank.
      const pid_t pid = spawn_process(argv, dir_of(*cell) + "/log.txt",
                                      {"OMP_NUM_THREADS=" + std::to_string(threads)},
                                      {"OMPI_", "PMIX_", "PMI_", "SLURM_STEP_NUM_TASKS"});  // what launched_by_mpi() reads
      running[pid] = Running{cell, std::chrono::steady_clock::now(), read_status(dir_of(*cell)).value("wall_seconds", 0.0)};
      ++started;
      ++summary.ran;
    }
    if (running.empty()) break;  // max_cells reached or stopping
    if (g_signal && !stopping) stop_all();
    ExitStatus st;
    const pid_t pid = wait_process(-1, st);
    if (pid == 0) continue;  // a signal: handled at the top of the loop
    const auto it = running.find(pid);
    if (it == running.end()) continue;
    const Cell* cell = it->second.cell;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - it->second.start).count();
    const double wall_before = it->second.wall_before;
    running.erase(it);
    nlohmann::json j = read_status(dir_of(*cell));
    // A cell that ended on its own without a status (its cell.json not written: a full disk) failed,
    // and says where its reason is (it was listed as "unknown" and counted failed: a user audit).
    if ((st.code == cell_done || st.code == cell_failed) && j.value("status", "").empty()) {
      j["status"] = "failed";
      j["reason"] = "the cell ended (" + st.describe() + ") without writing its cell.json (a full disk?); see " +
                    dir_of(*cell) + "/log.txt";
    }
    // The cell's wall time as the comparison sees it: its processes from start to exit.
    j["wall_seconds"] = wall_before + elapsed;
    j["runner_rank"] = o.rank;
    io::write_text_atomically(dir_of(*cell) + "/cell.json", json_text(j, 2) + "\n");
    if (st.code == cell_interrupted) {
      summary.interrupted = true;
      std::error_code ec;  // (stopped in pretraining or before: nothing to resume from, and it starts over)
      log::warn(fs::exists(dir_of(*cell) + "/checkpoint.h5", ec)
                    ? strfmt("%s: interrupted at its checkpoint", cell->id.c_str())
                    : strfmt("%s: interrupted before its first checkpoint; it starts again when the comparison resumes",
                             cell->id.c_str()));
      if (!stopping) stop_all();
      continue;
    }
    if (st.code != cell_done && st.code != cell_failed) {
      if (stopping) {  // killed while we were stopping: resumable from its last checkpoint
        summary.interrupted = true;
        continue;
      }
      const std::string why = "the cell's process ended with " + st.describe() + " (see " + dir_of(*cell) + "/log.txt" +
                              (st.signal == SIGKILL ? "; SIGKILL is often the out-of-memory killer: if it comes again, "
                                                      "run fewer --jobs or give the cells a smaller run.memory_budget"
                                                    : "") +
                              ")";
      const bool stopped_from_outside =
          st.signal == SIGKILL || st.signal == SIGTERM || st.signal == SIGINT || st.signal == SIGHUP;
      if (j.value("status", "") == "done") {  // a done cell's continuation (more minutes): it keeps its result
        j["continuation_failed"] = why;
      } else if (stopped_from_outside) {  // not the cell's failure: a re-run continues it
        std::error_code ec;
        const bool checkpoint = fs::exists(dir_of(*cell) + "/checkpoint.h5", ec);
        j["status"] = "interrupted";
        j["reason"] = why;
        io::write_text_atomically(dir_of(*cell) + "/cell.json", json_text(j, 2) + "\n");
        ++summary.killed;
        log::warn(strfmt("[%d/%d] %s: %s; it %s when the comparison runs again", number.at(cell), total,
                         cell->id.c_str(), why.c_str(),
                         checkpoint ? "continues from its checkpoint" : "starts again (no checkpoint yet)"));
        continue;
      } else {
        j["status"] = "failed";
        j["reason"] = why;
      }
      // (no max_rss_bytes: the cell did not report its own, and the kernel's figure for a child
      // holds this process's peak from before the child's exec, peak_resident_bytes)
      io::write_text_atomically(dir_of(*cell) + "/cell.json", json_text(j, 2) + "\n");
    }
    const bool done = j.value("status", "") == "done";
    done ? ++summary.done : ++summary.failed;
    log::info(strfmt("[%d/%d] %s: %s", number.at(cell), total, cell->id.c_str(), finished_line(*cell, j).c_str()));
  }
  if (g_signal) summary.interrupted = true;
  return summary;
}

}  // namespace nnvmc::compare
