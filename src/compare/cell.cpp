#include "compare/cell.hpp"

#include <sys/prctl.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "batching/budget.hpp"
#include "batching/peak_memory.hpp"
#include "core/errors.hpp"
#include "core/host_memory.hpp"
#include "core/log.hpp"
#include "io/hdf5_file.hpp"
#include "train/summary.hpp"
#include "train/stop_request.hpp"
#include "train/trainer.hpp"
#include "core/json_text.hpp"

namespace nnvmc::compare {
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) return nlohmann::json::object();
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception&) {
    return nlohmann::json::object();
  }
}

void write_json(const std::string& path, const nlohmann::json& j) {
  io::write_text_atomically(path, json_text(j, 2) + "\n");
}

/// Sum of the per-iteration training seconds recorded so far in result.h5.
double trained_seconds(const std::string& results) {
  if (!fs::exists(results)) return 0;
  io::H5File f(results, io::H5File::Mode::read);
  if (!f.exists("train/seconds")) return 0;
  const auto a = f.read("train/seconds");
  double s = 0;
  for (std::int64_t i = 0; i < a.numel(); ++i) s += a.as<double>()[i];
  return s;
}

int cuda_index(const std::string& device) {
  if (device == "cpu") return -1;
  const auto colon = device.find(':');
  return colon == std::string::npos ? 0 : std::stoi(device.substr(colon + 1));
}

/// The seconds of the training stages (those of an iteration: pretraining's, which ran before
/// the first one, are left out rather than reported as zero per iteration).
std::map<std::string, double> stage_seconds(const StageTimers& t) {
  std::map<std::string, double> out;
  for (const auto& [stage, e] : t.stages())
    if (stage.rfind("pretrain_", 0) != 0) out[stage] = e.seconds;
  return out;
}

}  // namespace

int run_cell(const std::string& dir, const CellRunOptions& options) {
  const auto t0 = Clock::now();
  const std::string status_path = dir + "/cell.json";
  // What earlier runs of this cell accumulated (they were interrupted).
  const nlohmann::json before = read_json(status_path);
  nlohmann::json j = nlohmann::json::object();
  j["segments"] = before.value("segments", 0) + 1;
  {  // counted when it starts: a segment killed outright (SIGKILL) writes nothing at its end (an audit)
    nlohmann::json started = before.is_object() ? before : nlohmann::json::object();
    started["segments"] = j["segments"];
    try {
      write_json(status_path, started);
    } catch (const std::exception& e) {
      log::warn(strfmt("cannot write %s: %s", status_path.c_str(), e.what()));
    }
  }
  double wall_before = before.value("wall_seconds", 0.0);
  std::map<std::string, double> stages_before;
  if (before.contains("stage_seconds"))
    for (const auto& [k, v] : before["stage_seconds"].items()) stages_before[k] = v.get<double>();
  const std::int64_t stage_iterations_before = before.value("stage_iterations", 0);
  std::int64_t peak_before = before.value("peak_tensor_bytes", 0);
  int exit_code = cell_failed;
  std::optional<batching::PeakMemoryScope> peak;
  // This segment's training timings, added to the earlier segments' (also when it is interrupted
  // in its final evaluation, so the next segment, which trains no more, keeps them).
  std::unique_ptr<Trainer> trainer;
  bool first_call = true;
  std::map<std::string, double> first_stages, last_stages;
  std::int64_t first_t = 0, last_t = 0;
  const auto record_training = [&](std::int64_t iterations) {
    // Training-only stage seconds (no burn-in, pretraining or evaluation), over all runs.
    std::map<std::string, double> stages = stages_before;
    for (const auto& [k, v] : last_stages) stages[k] += v - (first_stages.count(k) ? first_stages[k] : 0.0);
    j["stage_seconds"] = stages;
    j["stage_iterations"] = stage_iterations_before + (last_t - first_t);
    if (!trainer) return;
    std::int64_t n_params = 0;
    for (const auto& p : trainer->setup().wf->parameters()) n_params += p.numel();
    j["iterations"] = iterations;
    j["parameters"] = n_params;
    j["n_electrons"] = trainer->setup().molecules.front().system.n_electrons();
    j["train_seconds"] = trained_seconds(dir + "/result.h5");
  };
  try {
    const Config config = load_config(dir + "/cell.yaml");
    // K cells at once must not each take 'auto' = 60 % of the memory: each takes its share (the
    // config and checkpoint keep "auto", so an eval or resume elsewhere takes its own). The share
    // is also the host memory every cell's checks count with (the training's own memory; on a
    // GPU, the host copies of its checkpoints), whatever its device and budget.
    if (options.auto_memory_bytes > 0) {
      batching::MemoryBudget::set_cpu_auto_bytes(options.auto_memory_bytes);
      const std::string share = batching::format_bytes(double(options.auto_memory_bytes));
      if (config.run.memory_budget == "auto" && config.run.device == "cpu")
        log::info("run.memory_budget 'auto' is this comparison's share for the cells running at once: " + share);
      else
        log::info("this cell's share of host memory (the cells running at once split it): " + share);
    }
    if (options.cuda_sharers > 1 && config.run.memory_budget == "auto" && config.run.device != "cpu") {
      batching::MemoryBudget::set_cuda_auto_sharers(options.cuda_sharers);
      log::info(strfmt("run.memory_budget 'auto' is a 1/%d share of the GPU's: %d cells run at once", options.cuda_sharers,
                       options.cuda_sharers));
    }
    peak.emplace(cuda_index(config.run.device));
    const std::string ckpt = dir + "/checkpoint.h5";
    Trainer::install_signal_handlers(/*second_signal_ends=*/false);
    if (fs::exists(ckpt)) {
      log::info(strfmt("resuming cell %s from its checkpoint", config.run.name.c_str()));
      trainer = std::make_unique<Trainer>(config, ckpt);
    } else {
      trainer = std::make_unique<Trainer>(config);
    }
    trainer->set_iteration_hook([&](std::int64_t t) {
      last_stages = stage_seconds(trainer->timers());
      last_t = t;
      if (first_call) {
        first_call = false;
        first_stages = last_stages;
        first_t = t;
      }
      if (options.interrupt_at >= 0 && t >= options.interrupt_at) return StopAction::interrupt;
      return StopAction::none;
    });
    const TrainOutcome out = trainer->run();
    record_training(out.iterations);
    if (out.interrupted) {
      j["status"] = "interrupted";
      exit_code = cell_interrupted;
    } else {
      j["status"] = "done";
      j["reached_iterations"] = out.iterations >= config.optim.iterations;
      j["minutes"] = config.optim.minutes;  // the clock it stopped on (more minutes continue it)
      if (config.eval.steps > 0) {
        j.update(eval_json(out.final_eval));
        // the Hartree–Fock energy the trainer checks the final energy against (compare marks a cell above it)
        if (const auto e_hf = trainer->hartree_fock_energies(); !e_hf.empty() && std::isfinite(e_hf.front().energy)) {
          j["e_hf"] = e_hf.front().energy;
          j["e_hf_source"] = e_hf.front().source;
        }
        log_eval_text(out.final_eval);  // (the cell's log shows its result, as train's stdout does)
      } else {
        j["reason"] = "no evaluation (eval_steps 0)";
      }
      exit_code = cell_done;
    }
  } catch (const Interrupted& e) {  // a signal during pretraining, burn-in or evaluation: redo from its checkpoint
    record_training(last_t);  // the hook's last call: the iteration training reached
    j["status"] = "interrupted";
    log::warn(strfmt("cell interrupted: %s", e.what()));
    exit_code = cell_interrupted;
  } catch (const std::exception& e) {
    if (before.value("status", "") == "done") {  // more minutes for a done cell: it keeps its result
      const auto segments = j["segments"];
      j = before;
      j["segments"] = segments;  // (this segment counts, as a killed one does)
      j["continuation_failed"] = e.what();
      log::error(strfmt("the cell's continuation failed (it keeps its earlier result): %s", e.what()));
      exit_code = cell_done;
    } else {
      j["status"] = "failed";
      j["reason"] = e.what();
      log::error(strfmt("cell failed: %s", e.what()));
      exit_code = cell_failed;
    }
  }
  const std::int64_t peak_now = peak ? peak->peak_bytes() : 0;
  j["peak_tensor_bytes"] = std::max(peak_before, peak_now);
  j["max_rss_bytes"] = std::max<std::int64_t>(before.value("max_rss_bytes", std::int64_t{0}), peak_resident_bytes());
  j["wall_seconds"] = wall_before + std::chrono::duration<double>(Clock::now() - t0).count();
  try {
    write_json(status_path, j);
  } catch (const std::exception& e) {
    log::error(strfmt("cannot write %s: %s", status_path.c_str(), e.what()));
    return cell_failed;
  }
  return exit_code;
}

}  // namespace nnvmc::compare
