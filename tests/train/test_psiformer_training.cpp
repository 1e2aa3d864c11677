/// The Psiformer through the unchanged training stack: SPRING lowers the energy, resume is
/// bit-identical, every optimizer and float32 run, HF pretraining fits its orbitals.
#include <gtest/gtest.h>

#include <numeric>

#include "common/run_files.hpp"
#include "common/test_util.hpp"
#include "train/pretrain.hpp"
#include "train/trainer.hpp"

using namespace nnvmc;
using test::column;
using test::fresh_dir;

namespace {
/// A tiny He run with a small Psiformer and the forward Laplacian.
Config tiny_psiformer_config(const std::string& optimizer, const std::string& out, int iterations) {
  Config c = parse_config(
      "system: {molecule: he}\n"
      "model: {type: psiformer, psiformer: {layers: 1, heads: 2, head_dim: 4, mlp_hidden_dims: [8],"
      " determinants: 2}}\n"
      "sampler: {walkers: 32, steps_per_iteration: 2, burn_in: 10, step_size: 0.3}\n"
      "hamiltonian: {laplacian: forward}\n"
      "optim: {lr: 0.05, log_every: 1000, sr: {damping: 0.001, norm_constraint: 0.001, chunk_walkers: 8},"
      " spring: {momentum: 0.9}}\n"
      "eval: {steps: 3, burn_in: 2}\n"
      "pretrain: {steps: 0}\n"
      "run: {seed: 7, checkpoint_every: 2}\n",
      {"optim.type=" + optimizer}, "tiny_psiformer.yaml");
  c.optim.iterations = iterations;
  c.run.output = out;
  c.run.threads = 1;
  return c;
}
}  // namespace

TEST(PsiformerTraining, SpringLowersTheEnergyOfHelium) {
  const auto dir = fresh_dir("nnvmc_psiformer_spring");
  Trainer t(tiny_psiformer_config("spring", dir, 40));
  t.run(false);
  const auto e = column(dir + "/result.h5", "train/energy");
  ASSERT_EQ(e.size(), 40u);
  for (double x : e) EXPECT_TRUE(std::isfinite(x));
  const double first = test::mean_of(e, 0, 5), last = test::mean_of(e, 30, 40);
  EXPECT_LT(last, first - 0.1) << "first five " << first << ", last ten " << last;
}

TEST(PsiformerTraining, ResumedSpringRunEqualsUninterruptedRun) {
  const auto dir_a = fresh_dir("nnvmc_psiformer_resume_a"), dir_b = fresh_dir("nnvmc_psiformer_resume_b");
  Trainer a(tiny_psiformer_config("spring", dir_a, 6));
  a.run(false);
  {
    Trainer b(tiny_psiformer_config("spring", dir_b, 3));  // "interrupted" after 3 iterations
    b.run(false);
  }
  Trainer resumed(tiny_psiformer_config("spring", dir_b, 6), dir_b + "/checkpoint.h5");
  resumed.run(false);
  const auto pa = module_state(*a.setup().wf), pb = module_state(*resumed.setup().wf);
  ASSERT_EQ(pa.size(), pb.size());
  for (const auto& [k, v] : pa) EXPECT_TRUE(torch::equal(v, pb.at(k))) << k;
  EXPECT_TRUE(torch::equal(a.setup().molecules[0].sampler->positions(), resumed.setup().molecules[0].sampler->positions()));
  const auto ea = column(dir_a + "/result.h5", "train/energy");
  const auto eb = column(dir_b + "/result.h5", "train/energy");
  ASSERT_EQ(ea.size(), 6u);
  EXPECT_EQ(ea, eb);
}

TEST(PsiformerTraining, EveryOptimizerAndFloat32TrainFinitely) {
  for (const char* type : {"adam", "sr", "minsr", "spring", "kfac"}) {
    for (const char* dtype : {"float64", "float32"}) {
      if (std::string(dtype) == "float32" && std::string(type) != "spring") continue;
      const auto dir = fresh_dir(std::string("nnvmc_psiformer_") + type + "_" + dtype);
      auto c = tiny_psiformer_config(type, dir, 2);
      c.run.dtype = dtype;
      c.hamiltonian.laplacian = std::string(dtype) == "float32" ? "jvp" : "forward";
      Trainer t(c);
      EXPECT_EQ(t.run(false).iterations, 2) << type << " " << dtype;
      for (double e : column(dir + "/result.h5", "train/energy")) EXPECT_TRUE(std::isfinite(e)) << type << " " << dtype;
    }
  }
}

TEST(PsiformerTraining, PretrainingFitsItsOrbitalsToHartreeFock) {
  Config c = parse_config(
      "system: {molecule: lih}\n"
      "model: {type: psiformer, psiformer: {layers: 1, heads: 2, head_dim: 8, mlp_hidden_dims: [16],"
      " determinants: 2}}\n"
      "sampler: {walkers: 64, steps_per_iteration: 5, step_size: 0.3}\n"
      "run: {seed: 4, threads: 1}\n",
      {}, "pretrain_psiformer.yaml");
  VmcSetup s = make_setup(c);
  PretrainOptions p;
  p.steps = 60;
  p.basis = "sto-3g";
  p.lr = 3e-3;
  StageTimers timers;
  const auto r = pretrain(s, p, timers);
  EXPECT_EQ(r.steps, 60);
  EXPECT_LT(r.final_loss, 0.5 * r.initial_loss);
}
