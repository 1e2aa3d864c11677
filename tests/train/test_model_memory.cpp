// A model or a training state too large for this machine is refused with an error naming the
// model's keys, before the kernel's OOM killer would end the process.
#include <gtest/gtest.h>

#include <string>

#include "batching/peak_memory.hpp"
#include "core/errors.hpp"
#include "common/test_util.hpp"
#include "core/system.hpp"
#include "core/timer.hpp"
#include "models/system_tensors.hpp"
#include "train/optimizer.hpp"
#include "train/per_sample_gradients.hpp"
#include "train/setup.hpp"

using namespace nnvmc;

namespace {

const auto kF64 = torch::TensorOptions().dtype(torch::kFloat64);

ModelConfig ferminet(int width) {
  ModelConfig m;
  m.type = "ferminet";
  m.ferminet.hidden_dims = {{width, 8}, {width, 8}};
  m.ferminet.determinants = 2;
  return m;
}

System lih() { return load_molecule("lih", test::molecules_dir()); }

std::int64_t parameter_bytes(WaveFunction& wf) {
  std::int64_t bytes = 0;
  for (const auto& p : trainable_parameters(wf)) bytes += p.numel() * p.element_size();
  return bytes;
}

}  // namespace

TEST(ModelMemory, AModelWhoseParametersPassTheCapIsRefusedNamingTheModelAndNothingIsKept) {
  const std::int64_t before = batching::PeakMemoryScope::current_bytes();
  try {
    (void)build_model(ferminet(512), lih(), kF64, /*cap_bytes=*/1 << 20);
    FAIL() << "a model of several MB built under a 1 MiB cap";
  } catch (const BudgetError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'model.ferminet'"), std::string::npos) << what;
    EXPECT_NE(what.find("too large for this machine"), std::string::npos) << what;
    EXPECT_NE(what.find("1.00 MiB, the cap it was built under"), std::string::npos) << what;
  }
  EXPECT_EQ(batching::PeakMemoryScope::current_bytes(), before);  // what was allocated is freed
}

TEST(ModelMemory, AModelThatFitsIsBuiltInTheRequestedDtypeUnderTheDefaultCap) {
  auto wf = build_model(ferminet(16), lih(), kF64);
  for (const auto& p : wf->parameters()) EXPECT_EQ(p.scalar_type(), torch::kFloat64);
  // The cap holds while the model is built (float32) and moved (float64): 12 bytes per parameter.
  const std::int64_t p = parameter_bytes(*wf) / 8;
  EXPECT_NO_THROW((void)build_model(ferminet(16), lih(), kF64, 13 * p + (1 << 16)));
}

// Adam holds exactly its estimate after a step: the gradient and two moments per parameter.
TEST(ModelMemory, AdamsEstimateIsWhatItKeepsAfterAStep) {
  auto wf = build_model(ferminet(16), lih(), kF64);
  OptimOptions o;
  o.type = "adam";
  const OptimizerMemory memory = optimizer_memory_estimate(o, *wf);
  EXPECT_EQ(memory.kept, 2.0 * static_cast<double>(parameter_bytes(*wf)));
  const double estimate = memory.kept + memory.step;
  auto opt = make_optimizer(o, *wf);
  torch::manual_seed(3);
  const System system = lih();
  const SystemTensors sys = system_tensors(system, kF64);
  const std::vector<WalkerBatch> batches{{&sys, torch::randn({8, system.n_electrons(), 3}, kF64), torch::randn({8}, kF64)}};
  StageTimers timers;
  const std::int64_t before = batching::PeakMemoryScope::current_bytes();
  ASSERT_TRUE(opt->step(*wf, batches, 0, timers));
  EXPECT_EQ(static_cast<double>(batching::PeakMemoryScope::current_bytes() - before), estimate);
}

// K-FAC's factors grow with the square of a layer's width, SPRING's state with the parameters.
TEST(ModelMemory, KfacsEstimateGrowsWithTheSquareOfTheWidthAndSpringsWithTheParameters) {
  OptimOptions kfac, spring, sr;
  kfac.type = "kfac", spring.type = "spring", sr.type = "sr";
  auto narrow = build_model(ferminet(32), lih(), kF64), wide = build_model(ferminet(128), lih(), kF64);
  const auto total = [](const OptimizerMemory& m) { return m.kept + m.step; };
  const double p = static_cast<double>(parameter_bytes(*narrow));
  EXPECT_EQ(optimizer_memory_estimate(spring, *narrow).kept, p);  // the previous update
  EXPECT_EQ(total(optimizer_memory_estimate(spring, *narrow)), 4.0 * p);
  EXPECT_EQ(optimizer_memory_estimate(sr, *narrow).kept, 0.0);
  const double kfac_ratio = total(optimizer_memory_estimate(kfac, *wide)) / total(optimizer_memory_estimate(kfac, *narrow));
  const double param_ratio = static_cast<double>(parameter_bytes(*wide)) / p;
  EXPECT_GT(kfac_ratio, param_ratio);
  EXPECT_GT(total(optimizer_memory_estimate(kfac, *wide)), total(optimizer_memory_estimate(spring, *wide)));
  // the undo copy (on the run's device) and a checkpoint's copies (on the host): parameters and
  // kept state once and three times more
  const TrainingMemory t = training_memory_estimate({10, 20}, 100);
  EXPECT_EQ(t.device, 10 + 20 + (100 + 10));
  EXPECT_EQ(t.host, 3 * (100 + 10));
  OptimOptions unknown;
  unknown.type = "lbfgs";
  EXPECT_THROW((void)optimizer_memory_estimate(unknown, *wide), ConfigError);
}

TEST(ModelMemory, ATrainingStateLargerThanTheFreeMemoryIsRefusedNamingModelParametersAndOptimizer) {
  auto wf = build_model(ferminet(16), lih(), kF64);
  OptimOptions o;
  o.type = "adam";
  const TrainingMemory need =
      training_memory_estimate(optimizer_memory_estimate(o, *wf), static_cast<double>(parameter_bytes(*wf)));
  const auto total = static_cast<std::int64_t>(need.total());
  EXPECT_EQ(check_training_memory(o, *wf, /*cpu=*/true, total, -1), need.total());
  EXPECT_NO_THROW(check_training_memory(o, *wf, true, -1, -1));  // unknown: not checked
  const auto expect_refused = [&](bool cpu, std::int64_t device, std::int64_t host, const std::string& where) {
    try {
      check_training_memory(o, *wf, cpu, device, host);
      ADD_FAILURE() << "a training state larger than the memory left was accepted" << where;
    } catch (const BudgetError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("'model.ferminet'"), std::string::npos) << what;
      EXPECT_NE(what.find(std::to_string(parameter_count(trainable_parameters(*wf))) + " parameters"), std::string::npos)
          << what;
      EXPECT_NE(what.find("optim.type = adam needs about"), std::string::npos) << what;
      EXPECT_NE(what.find(where), std::string::npos) << what;
    }
  };
  expect_refused(true, total - 1, -1, "more (gradient");
  // on a GPU the device holds the optimizer and the undo copy, the host the checkpoint's copies
  const auto device = static_cast<std::int64_t>(need.device), host = static_cast<std::int64_t>(need.host);
  EXPECT_EQ(check_training_memory(o, *wf, /*cpu=*/false, device, host), need.device);
  expect_refused(false, device - 1, host, "more on the GPU");
  expect_refused(false, device, host - 1, "more in host memory");
}
