#pragma once
/// @file evaluate.hpp
/// Energy evaluation with fixed parameters: MH sampling, local energies, reblocking.
#include <functional>
#include <vector>

#include "core/timer.hpp"
#include "train/blocking.hpp"
#include "train/setup.hpp"

namespace nnvmc {

/// Result of an evaluation.
struct EvalResult {
  BlockingResult stats;        ///< mean energy, error bar, autocorrelation time (in iterations)
  double variance = 0;         ///< variance of the local energy over all samples
  double acceptance = 0;       ///< mean MH acceptance
  int steps = 0;               ///< measurement iterations
  int walkers = 0;             ///< walkers per iteration
  std::vector<double> series;  ///< walker-averaged energy per iteration
};

/// Progress callback: (iteration done, total).
using ProgressFn = std::function<void(int, int)>;

/// Runs `options.burn_in` MH steps, then `options.steps` iterations of
/// `steps_per_iteration` MH steps + a local-energy evaluation. The sampler must be initialised.
EvalResult evaluate(VmcSetup& setup, const EvalOptions& options, StageTimers& timers,
                    const ProgressFn& progress = {});

}  // namespace nnvmc
