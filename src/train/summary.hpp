#pragma once
/// @file summary.hpp
/// summary.json of a run: final energy estimate, settings and per-stage timings.
#include <string>

#include <nlohmann/json.hpp>

#include "core/timer.hpp"
#include "train/evaluate.hpp"

namespace nnvmc {

/// JSON object of an evaluation: energy, energy_err, error_plateau, the batch-means and
/// autocorrelation cross-checks, variance, autocorr_time, step_size, excluded samples, steps, walkers.
nlohmann::json eval_json(const EvalResult& r);

/// Human-readable lines of an evaluation (energy ± error, the cross-checks, and a warning when
/// the reblocking found no plateau or samples were excluded).
std::string eval_text(const EvalResult& r);

/// Per-stage seconds and call counts.
nlohmann::json timers_json(const StageTimers& t);

/// Writes summary.json (atomically) for a finished training run; `extra` keys are added.
void write_summary(const std::string& path, const VmcSetup& setup, const EvalResult& eval,
                   const StageTimers& timers, std::int64_t iterations,
                   const nlohmann::json& extra = nlohmann::json::object());

}  // namespace nnvmc
