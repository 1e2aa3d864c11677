#include <gtest/gtest.h>

#include <filesystem>

#include "common/run_files.hpp"
#include "core/errors.hpp"
#include "io/hdf5_file.hpp"
#include "train/trainer.hpp"

using namespace nnvmc;
using test::column;
using test::fresh_dir;
namespace fs = std::filesystem;

namespace {
/// A tiny He run with a natural-gradient optimizer.
Config tiny_ngd_config(const std::string& type, const std::string& out, int iterations) {
  Config c = parse_config(
      "system: {molecule: he}\n"
      "model: {ferminet: {hidden_dims: [[8, 4], [8, 4]], determinants: 2}}\n"
      "sampler: {walkers: 16, steps_per_iteration: 2, burn_in: 5, step_size: 0.3}\n"
      "optim: {lr: 0.05, log_every: 1000, sr: {damping: 0.001, norm_constraint: 0.001, chunk_walkers: 5},"
      " spring: {momentum: 0.9}}\n"
      "eval: {steps: 3, burn_in: 2}\n"
      "pretrain: {steps: 0}\n"
      "run: {seed: 5, checkpoint_every: 2}\n",
      {"optim.type=" + type}, "tiny_ngd.yaml");
  c.optim.iterations = iterations;
  c.run.output = out;
  c.run.threads = 1;
  return c;
}
}  // namespace

TEST(SpringResume, ResumedSpringRunEqualsUninterruptedRun) {
  const auto dir_a = fresh_dir("nnvmc_spring_a"), dir_b = fresh_dir("nnvmc_spring_b");
  Trainer a(tiny_ngd_config("spring", dir_a, 6));
  a.run(false);
  {
    Trainer b(tiny_ngd_config("spring", dir_b, 3));  // "interrupted" after 3 iterations
    b.run(false);
  }
  const auto saved = load_checkpoint(dir_b + "/checkpoint.h5");
  ASSERT_EQ(saved.optimizer.count("spring/previous_update"), 1u);  // momentum is checkpointed
  Trainer resumed(tiny_ngd_config("spring", dir_b, 6), dir_b + "/checkpoint.h5");
  resumed.run(false);
  const auto pa = module_state(*a.setup().wf), pb = module_state(*resumed.setup().wf);
  for (const auto& [k, v] : pa) EXPECT_TRUE(torch::equal(v, pb.at(k))) << k;
  const auto ea = column(dir_a + "/result.h5", "train/energy");
  const auto eb = column(dir_b + "/result.h5", "train/energy");
  ASSERT_EQ(ea.size(), 6u);
  EXPECT_EQ(ea, eb);
}

TEST(SpringResume, ResumedKfacRunEqualsUninterruptedRun) {
  const auto dir_a = fresh_dir("nnvmc_kfac_a"), dir_b = fresh_dir("nnvmc_kfac_b");
  Trainer a(tiny_ngd_config("kfac", dir_a, 5));
  a.run(false);
  {
    Trainer b(tiny_ngd_config("kfac", dir_b, 2));
    b.run(false);
  }
  const auto saved = load_checkpoint(dir_b + "/checkpoint.h5");
  ASSERT_EQ(saved.optimizer.count("kfac/ema_weight"), 1u);  // the moving averages are checkpointed
  Trainer resumed(tiny_ngd_config("kfac", dir_b, 5), dir_b + "/checkpoint.h5");
  resumed.run(false);
  const auto pa = module_state(*a.setup().wf), pb = module_state(*resumed.setup().wf);
  for (const auto& [k, v] : pa) EXPECT_TRUE(torch::equal(v, pb.at(k))) << k;
  EXPECT_EQ(column(dir_a + "/result.h5", "train/energy"), column(dir_b + "/result.h5", "train/energy"));
}

TEST(SpringResume, EveryNaturalGradientTypeTrainsFinitely) {
  for (const char* type : {"sr", "minsr", "spring", "kfac"}) {
    const auto dir = fresh_dir(std::string("nnvmc_ngd_") + type);
    Trainer t(tiny_ngd_config(type, dir, 3));
    const auto out = t.run(false);
    EXPECT_EQ(out.iterations, 3) << type;
    for (double e : column(dir + "/result.h5", "train/energy")) EXPECT_TRUE(std::isfinite(e)) << type;
  }
}

TEST(SpringResume, UnknownOptimizerTypeIsAConfigError) {
  EXPECT_THROW(tiny_ngd_config("lbfgs", fresh_dir("nnvmc_ngd_bad"), 1), ConfigError);
}

TEST(SpringResume, MinsrLegBetweenSpringLegsDropsSpringMomentum) {
  const auto dir = fresh_dir("nnvmc_spring_detour");
  {
    Trainer spring(tiny_ngd_config("spring", dir, 2));
    spring.run(false);
  }
  ASSERT_EQ(load_checkpoint(dir + "/checkpoint.h5").optimizer.count("spring/previous_update"), 1u);
  {
    Trainer minsr(tiny_ngd_config("minsr", dir, 4), dir + "/checkpoint.h5");
    minsr.run(false);
  }
  // minsr neither uses nor keeps the momentum: a later spring leg starts without it, as after adam
  EXPECT_EQ(load_checkpoint(dir + "/checkpoint.h5").optimizer.count("spring/previous_update"), 0u);
}
