#pragma once
/// @file summary.hpp
/// summary.json of a run: final energy estimate, settings and per-stage timings.
#include <string>

#include <nlohmann/json.hpp>

#include "core/timer.hpp"
#include "train/evaluate.hpp"

namespace nnvmc {

/// JSON object of an evaluation: energy, energy_err, variance, autocorr_time, steps, walkers...
nlohmann::json eval_json(const EvalResult& r);

/// Per-stage seconds and call counts.
nlohmann::json timers_json(const StageTimers& t);

/// Writes summary.json (atomically) for a finished training run.
void write_summary(const std::string& path, const VmcSetup& setup, const EvalResult& eval,
                   const StageTimers& timers, std::int64_t iterations);

}  // namespace nnvmc
