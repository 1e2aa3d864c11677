/// The existing single-molecule trainer drives the Orbformer: a short run on H2 lowers the
/// energy, and its checkpoint restores the same wavefunction.
#include <gtest/gtest.h>

#include <numeric>

#include "common/run_files.hpp"
#include "common/test_util.hpp"
#include "models/determinant_balance.hpp"
#include "models/orbformer/orbformer.hpp"
#include "train/optimizer.hpp"
#include "train/per_sample_gradients.hpp"
#include "train/trainer.hpp"

using namespace nnvmc;
using test::column;
using test::fresh_dir;

namespace {}  // namespace

TEST(OrbformerTraining, ShortAdamRunOnH2LowersTheEnergy) {
  const auto dir = fresh_dir("nnvmc_orbformer_h2");
  Config c = parse_config(
      "system: {molecule: h2}\n"
      "model: {type: orbformer}\n"
      "sampler: {walkers: 64, steps_per_iteration: 5, burn_in: 50, step_size: 0.3}\n"
      "hamiltonian: {laplacian: forward}\n"
      "optim: {type: adam, lr: 0.01, iterations: 60, log_every: 1000}\n"
      "pretrain: {steps: 0}\n"
      "run: {seed: 3, checkpoint_every: 0}\n",
      {}, "orbformer_h2.yaml");
  c.model.orbformer = test::small_orbformer(2);
  c.run.output = dir;
  c.run.threads = 1;
  Trainer t(c);
  t.run(false);
  const auto e = column(dir + "/result.h5", "train/energy");
  ASSERT_EQ(e.size(), 60u);
  for (double x : e) EXPECT_TRUE(std::isfinite(x));
  const double first = test::mean_of(e, 0, 10), last = test::mean_of(e, 50, 60);
  EXPECT_LT(last, first - 0.05) << "first 10: " << first << " last 10: " << last;
  EXPECT_GT(last, -1.2);  // variational: above the exact -1.1745 (within noise of 64 walkers)
}

TEST(OrbformerTraining, PerSampleGradientsSumToTheBatchGradient) {
  // The natural-gradient optimizers (sr, minsr, spring) take per-walker gradients from one
  // batched backward pass; the Orbformer's molecule half (embeddings, max over nuclei) must
  // go through it too.
  const System s = load_molecule("lih", test::molecules_dir());
  const auto sys = test::tensors(s);
  Orbformer wf(test::small_orbformer());
  const auto r = test::random_positions(s, 5);
  const auto jac = per_sample_log_gradients(wf, sys, r, 2);
  const auto params = trainable_parameters(wf);
  ASSERT_EQ(jac.size(1), parameter_count(params));
  const auto g = torch::autograd::grad({wf.forward(r, sys).logabs.sum()}, params, {}, false, false, true);
  std::vector<torch::Tensor> flat;
  for (size_t k = 0; k < params.size(); ++k)
    flat.push_back(g[k].defined() ? g[k].reshape(-1) : torch::zeros({params[k].numel()}, torch::kFloat64));
  const auto batch = torch::cat(flat);
  EXPECT_LT((jac.sum(0) - batch).abs().max().item<double>(), 1e-10 * (1 + batch.abs().max().item<double>()));
}

TEST(OrbformerTraining, OneSpringStepTakesWalkersOfTwoMoleculesWithDifferentShapes) {
  // What part B builds on: the optimizer's per-molecule batches reach one set of Orbformer
  // weights (H2: 2 electrons, 2 nuclei; LiH: 4 electrons, 2 nuclei; H2O: 10, 3).
  Orbformer wf(test::small_orbformer());
  const System h2 = load_molecule("h2", test::molecules_dir()), h2o = load_molecule("h2o", test::molecules_dir());
  const auto s1 = test::tensors(h2), s2 = test::tensors(h2o);
  const auto r1 = test::random_positions(h2, 6, 1), r2 = test::random_positions(h2o, 6, 2);
  const auto e1 = torch::randn({6}, torch::kFloat64) - 1, e2 = torch::randn({6}, torch::kFloat64) - 76;
  OptimOptions o;
  o.type = "spring";
  auto opt = make_optimizer(o, wf);
  const auto before = trainable_parameters(wf);
  std::vector<torch::Tensor> copy;
  for (const auto& p : before) copy.push_back(p.detach().clone());
  StageTimers timers;
  EXPECT_TRUE(opt->step(wf, {{&s1, r1, e1}, {&s2, r2, e2}}, 0, timers));
  double moved = 0;
  for (size_t k = 0; k < copy.size(); ++k) moved += (before[k] - copy[k]).abs().sum().item<double>();
  EXPECT_GT(moved, 0.0);
  torch::NoGradGuard ng;
  EXPECT_TRUE(torch::isfinite(wf.forward(r2, s2).logabs).all().item<bool>());
}

// optim.determinant_balance: Adam's gradient gains 2w·∇θP (P = determinant_balance_penalty with
// σ_E of the clipped energies), oneqmc's weight relative to the energy gradient.
TEST(OrbformerTraining, AdamGradientGainsTheDeterminantBalancePenalty) {
  const System h2 = load_molecule("h2", test::molecules_dir());
  const auto sys = test::tensors(h2);
  const auto r = test::random_positions(h2, 8, 4);
  const auto e = torch::randn({8}, torch::kFloat64) - 1;
  const double w = 1e-3;
  auto gradients = [&](double weight, Orbformer& wf) {
    OptimOptions o;
    o.type = "adam";
    o.determinant_balance = weight;
    auto opt = make_optimizer(o, wf);
    StageTimers timers;
    EXPECT_TRUE(opt->step(wf, {{&sys, r, e}}, 0, timers));
    std::vector<torch::Tensor> g;
    for (const auto& p : wf.parameters()) g.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
    return g;
  };
  Orbformer plain(test::small_orbformer()), penalised(test::small_orbformer()), reference(test::small_orbformer());
  const auto g0 = gradients(0.0, plain), g1 = gradients(w, penalised);
  const auto clipped = clip_local_energies(e, OptimOptions{}.clip_width);
  const auto p = determinant_balance_penalty(reference, r, sys, clipped.std().item<double>());
  const auto params = reference.parameters();
  const auto gp = torch::autograd::grad({2.0 * w * p}, params, {}, false, false, true);
  double max_diff = 0, max_penalty = 0;
  for (size_t k = 0; k < params.size(); ++k) {
    const auto expected = gp[k].defined() ? gp[k] : torch::zeros_like(params[k]);
    max_diff = std::max(max_diff, (g1[k] - g0[k] - expected).abs().max().item<double>());
    max_penalty = std::max(max_penalty, expected.abs().max().item<double>());
  }
  EXPECT_GT(max_penalty, 1e-8);
  EXPECT_LT(max_diff, 1e-12 + 1e-9 * max_penalty);
}

// A batch of molecules averages the molecules' gradients (and pools their walkers for the
// curvature), so a molecule listed twice must give exactly the step it gives once: for Adam,
// the natural gradients (with and without the determinant-balance right-hand side) and K-FAC.
TEST(OrbformerTraining, EveryOptimizerStepsAlikeForAMoleculeListedOnceOrTwice) {
  const System lih = load_molecule("lih", test::molecules_dir());
  const auto sys = test::tensors(lih);
  const auto r = test::random_positions(lih, 6, 7);
  const auto e = torch::randn({6}, torch::kFloat64) - 8;
  struct Case {
    const char* type;
    double balance;
  };
  for (const Case c : {Case{"adam", 1e-3}, Case{"sr", 0.0}, Case{"minsr", 1e-3}, Case{"spring", 0.0},
                       Case{"spring", 1e-3}, Case{"kfac", 0.0}}) {
    auto update = [&](int copies) {
      Orbformer wf(test::small_orbformer(2));
      OptimOptions o;
      o.type = c.type;
      o.determinant_balance = c.balance;
      auto opt = make_optimizer(o, wf);
      std::vector<torch::Tensor> before;
      for (const auto& p : trainable_parameters(wf)) before.push_back(p.detach().clone());
      StageTimers timers;
      std::vector<WalkerBatch> batches(copies, WalkerBatch{&sys, r, e});
      EXPECT_TRUE(opt->step(wf, batches, 0, timers)) << c.type;
      std::vector<torch::Tensor> delta;
      const auto after = trainable_parameters(wf);
      for (size_t k = 0; k < after.size(); ++k) delta.push_back((after[k].detach() - before[k]).reshape(-1));
      return torch::cat(delta);
    };
    const auto once = update(1), twice = update(2);
    const double size = once.abs().max().item<double>();
    EXPECT_GT(size, 0.0) << c.type;
    EXPECT_LT((twice - once).abs().max().item<double>(), 1e-8 * size) << c.type << " balance " << c.balance;
  }
}
