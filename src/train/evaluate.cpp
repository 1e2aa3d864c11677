#include "train/evaluate.hpp"

#include <cmath>

#include "core/errors.hpp"

namespace nnvmc {

EvalResult evaluate(VmcSetup& s, const EvalOptions& options, StageTimers& timers,
                    const ProgressFn& progress) {
  const auto logabs = s.logabs_fn();
  EvalResult out;
  out.steps = options.steps;
  out.walkers = s.config.sampler.walkers;
  {
    auto scope = timers.scope("sampling");
    s.sampler->run(logabs, options.burn_in);
  }
  double sum_sq = 0, acc = 0;
  long count = 0;
  for (int t = 0; t < options.steps; ++t) {
    {
      auto scope = timers.scope("sampling");
      acc += s.sampler->run(logabs, s.config.sampler.steps_per_iteration);
    }
    auto scope = timers.scope("local_energy");
    const auto e = (*s.local_energy)(*s.wf, s.sampler->positions()).energy.to(torch::kFloat64).cpu();
    if (!torch::isfinite(e).all().item<bool>())
      throw NumericalError("non-finite local energy during evaluation at step " + std::to_string(t));
    out.series.push_back(e.mean().item<double>());
    sum_sq += e.square().sum().item<double>();
    count += e.numel();
    if (progress) progress(t + 1, options.steps);
  }
  out.stats = blocking_analysis(out.series);
  out.acceptance = options.steps > 0 ? acc / options.steps : 0.0;
  out.variance = count > 0 ? sum_sq / count - out.stats.mean * out.stats.mean : 0.0;
  return out;
}

}  // namespace nnvmc
