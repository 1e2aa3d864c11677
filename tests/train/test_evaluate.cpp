// Evaluation with fixed parameters: the step size adapts during burn-in only and is frozen while
// measuring; the error bar comes with cross-checks and a plateau flag.
#include <gtest/gtest.h>

#include "common/test_util.hpp"
#include "train/evaluate.hpp"

using namespace nnvmc;

namespace {
VmcSetup tiny_he(double step_size) {
  Config c = parse_config(
      "system: {molecule: he}\n"
      "model: {ferminet: {hidden_dims: [[8, 4], [8, 4]], determinants: 2}}\n"
      "sampler: {walkers: 32, steps_per_iteration: 5, target_acceptance: 0.5}\n"
      "run: {seed: 2, threads: 1}\n",
      {}, "tiny.yaml");
  c.sampler.step_size = step_size;
  VmcSetup s = make_setup(c);
  s.sampler->initialize(s.logabs_fn());
  return s;
}
}  // namespace

TEST(Evaluate, StepSizeAdaptsDuringBurnInOnlyThenStaysFrozen) {
  for (const double start : {0.005, 3.0}) {  // far too small (acceptance ≈ 1) and far too large
    VmcSetup s = tiny_he(start);
    StageTimers timers;
    double during = -1;
    const EvalResult r = evaluate(s, EvalOptions{.steps = 20, .burn_in = 150}, timers,
                                  [&](int done, int) {
                                    if (done == 1) during = s.sampler->step_size();
                                  });
    EXPECT_NE(r.step_size, start);
    EXPECT_EQ(during, r.step_size);               // frozen from the first measurement on
    EXPECT_EQ(s.sampler->step_size(), r.step_size);  // ... to the last
    EXPECT_GT(r.acceptance, 0.3) << "start " << start;
    EXPECT_LT(r.acceptance, 0.7) << "start " << start;
  }
}

TEST(Evaluate, WithoutBurnInTheGivenStepSizeIsUsedUnchanged) {
  VmcSetup s = tiny_he(0.123);
  StageTimers timers;
  const EvalResult r = evaluate(s, EvalOptions{.steps = 4, .burn_in = 0}, timers);
  EXPECT_EQ(r.step_size, 0.123);
  EXPECT_EQ(s.sampler->step_size(), 0.123);
  EXPECT_EQ(r.series.size(), 4u);
  EXPECT_FALSE(r.stats.plateau);  // 4 values: too few blocks for a trustworthy error bar
}
