// Failure recovery of the training loop: a failed step is retried with fresh random moves (not
// replayed), a few non-finite walkers are left out, a failure that persists stops the run cleanly
// with a checkpoint of the last good state, and a resumed run repeats all of this exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <map>

#include "common/run_files.hpp"
#include "common/test_util.hpp"
#include "core/errors.hpp"
#include "core/log.hpp"
#include "models/analytic/hydrogenic.hpp"
#include "train/finite_walkers.hpp"
#include "train/trainer.hpp"

using namespace nnvmc;
using test::column;
using test::fresh_dir;
namespace fs = std::filesystem;

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// H atom, ψ = exp(−ζr) with ζ trainable from 0.6: the exact ground state is ζ = 1, E = −½.
Trainer hydrogen_trainer(const std::string& out, int iterations, int max_failures = 10) {
  Config c = parse_config(
      "system: {molecule: h}\n"
      "sampler: {walkers: 64, steps_per_iteration: 5, burn_in: 20, step_size: 0.5}\n"
      "hamiltonian: {laplacian: forward}\n"
      "optim: {type: adam, lr: 0.05, lr_delay: 20, log_every: 1000}\n"
      "eval: {steps: 0}\n"
      "pretrain: {steps: 0}\n"
      "run: {seed: 4, checkpoint_every: 5}\n",
      {}, "hydrogen.yaml");
  c.optim.iterations = iterations;
  c.optim.max_consecutive_failures = max_failures;
  c.run.output = out;
  c.run.threads = 1;
  VmcSetup s = make_setup(c);
  s.wf = std::make_shared<Hydrogenic>(s.molecules[0].system, 0.6);
  return Trainer(std::move(s));
}

double zeta(Trainer& t) { return t.setup().wf->named_parameters()["zeta"].item<double>(); }
}  // namespace

TEST(Recovery, ANonFiniteStepIsRetriedWithNewMovesAndTrainingConverges) {
  const auto dir = fresh_dir("nnvmc_recover_once");
  Trainer t = hydrogen_trainer(dir, 60);
  std::vector<std::int64_t> seen;
  torch::Tensor first_try_positions;
  t.set_energy_hook([&](std::int64_t it, torch::Tensor& e) {
    seen.push_back(it);
    if (it == 7 && std::count(seen.begin(), seen.end(), 7) == 1) {  // iteration 8 fails once
      first_try_positions = t.setup().molecules[0].sampler->positions().clone();
      e = torch::full_like(e, kNaN);
    } else if (it == 7) {
      // The retry starts from the same walkers but draws new moves: other positions.
      EXPECT_FALSE(torch::equal(t.setup().molecules[0].sampler->positions(), first_try_positions));
    }
  });
  const auto out = t.run(false);
  EXPECT_EQ(out.iterations, 60);
  EXPECT_EQ(out.failed_steps, 1);
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 7), 2);
  const auto e = column(dir + "/result.h5", "train/energy");
  ASSERT_EQ(e.size(), 60u);  // one row per completed iteration, none for the failed try
  for (double v : e) EXPECT_TRUE(std::isfinite(v));
  // Converged to the exact ground state: ζ → 1, E → −½ with vanishing variance.
  EXPECT_NEAR(zeta(t), 1.0, 0.03);
  EXPECT_NEAR(e.back(), -0.5, 2e-3);
  EXPECT_LT(column(dir + "/result.h5", "train/variance").back(), 1e-3);
}

TEST(Recovery, AFewNonFiniteWalkersAreLeftOutAndCounted) {
  const auto dir = fresh_dir("nnvmc_recover_walker");
  Trainer t = hydrogen_trainer(dir, 6);
  t.set_energy_hook([](std::int64_t it, torch::Tensor& e) {
    if (it == 2) e[5] = kNaN;  // one walker of 64 (at most max(1, B/100) may be left out)
  });
  const auto out = t.run(false);
  EXPECT_EQ(out.iterations, 6);
  EXPECT_EQ(out.failed_steps, 0);
  EXPECT_EQ(out.excluded_walkers, 1);
  const auto excluded = column(dir + "/result.h5", "train/excluded_walkers");
  EXPECT_EQ(excluded, (std::vector<double>{0, 0, 1, 0, 0, 0}));
  for (double v : column(dir + "/result.h5", "train/energy")) EXPECT_TRUE(std::isfinite(v));
}

TEST(Recovery, APersistentFailureStopsCleanlyWithACheckpointOfTheLastGoodState) {
  const auto dir = fresh_dir("nnvmc_recover_stop");
  Trainer t = hydrogen_trainer(dir, 30, /*max_failures=*/4);
  int calls = 0;
  t.set_energy_hook([&](std::int64_t it, torch::Tensor& e) {
    if (it >= 3) {
      ++calls;
      e = torch::full_like(e, kNaN);
    }
  });
  try {
    t.run(false);
    FAIL() << "expected NumericalError";
  } catch (const NumericalError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("4 consecutive"), std::string::npos) << what;
    EXPECT_NE(what.find("optim.max_consecutive_failures"), std::string::npos) << what;
    EXPECT_NE(what.find("checkpoint.h5"), std::string::npos) << what;
    // the last good state's energy is named, so a state already damaged before the failures can be seen
    const auto energies = column(dir + "/result.h5", "train/energy");
    ASSERT_EQ(energies.size(), 3u);
    EXPECT_NE(what.find(strfmt("the last good state (iteration 3, whose step measured E %.6g +- ", energies[2])),
              std::string::npos)
        << what;
  }
  EXPECT_EQ(calls, 4);
  const Checkpoint c = load_checkpoint(dir + "/checkpoint.h5");
  EXPECT_EQ(c.iteration, 3);
  EXPECT_TRUE(torch::equal(c.parameters.at("zeta"), t.setup().wf->named_parameters()["zeta"].detach()));
  EXPECT_EQ(column(dir + "/result.h5", "train/energy").size(), 3u);
}

TEST(Recovery, AStepThatOverflowsLogPsiIsRejectedAndTheLastGoodStateIsCheckpointed) {
  // optim.lr = 1e300: Adam's first step moves every parameter by ~1e300. The parameters stay
  // finite, but log|ψ| at the walkers does not; the step must be rejected (before, it was kept,
  // the walkers held non-finite log|ψ| and the final checkpoint was refused).
  const auto dir = fresh_dir("nnvmc_recover_overflow");
  Config c = parse_config(
      "system: {molecule: he}\n"
      "model: {ferminet: {hidden_dims: [[8, 4], [8, 4]], determinants: 2}}\n"
      "sampler: {walkers: 16, steps_per_iteration: 2, burn_in: 5, step_size: 0.3}\n"
      "optim: {type: adam, lr: 1.0e300, log_every: 1000, max_consecutive_failures: 3}\n"
      "eval: {steps: 0}\n"
      "pretrain: {steps: 0}\n"
      "run: {seed: 11, checkpoint_every: 1}\n",
      {}, "overflow.yaml");
  c.optim.iterations = 5;
  c.run.output = dir;
  c.run.threads = 1;
  Trainer t(c);
  const TensorMap before = module_state(*t.setup().wf);
  try {
    t.run(false);
    FAIL() << "expected NumericalError";
  } catch (const NumericalError& e) {
    EXPECT_NE(std::string(e.what()).find("3 consecutive"), std::string::npos) << e.what();
  }
  const Checkpoint saved = load_checkpoint(dir + "/checkpoint.h5");  // written and loadable
  EXPECT_EQ(saved.iteration, 0);
  for (const auto& [k, v] : before) EXPECT_TRUE(torch::equal(v, saved.parameters.at(k))) << k;
  EXPECT_TRUE(torch::isfinite(t.setup().molecules[0].sampler->logabs()).all().item<bool>());
}

TEST(Recovery, ResumeRepeatsARecoveredRunBitForBit) {
  // The retry's fresh moves come from the sampler's own stream (not restored on failure), so a
  // run resumed from a checkpoint before the failures repeats them and their retries exactly.
  auto tiny = [](const std::string& out, int iterations) {
    Config c = parse_config(
        "system: {molecule: he}\n"
        "model: {ferminet: {hidden_dims: [[8, 4], [8, 4]], determinants: 2}}\n"
        "sampler: {walkers: 16, steps_per_iteration: 2, burn_in: 5, step_size: 0.3}\n"
        "optim: {log_every: 1000}\n"
        "eval: {steps: 0}\n"
        "pretrain: {steps: 0}\n"
        "run: {seed: 11, checkpoint_every: 3}\n",
        {}, "tiny.yaml");
    c.optim.iterations = iterations;
    c.run.output = out;
    c.run.threads = 1;
    return c;
  };
  // The first try of iterations 5 and 6 fails: 2 of 16 local energies non-finite.
  auto first_try_fails = [](std::map<std::int64_t, int>& tries) {
    return [&tries](std::int64_t it, torch::Tensor& e) {
      if ((it == 4 || it == 5) && tries[it]++ == 0) e[0] = kNaN, e[1] = kNaN;
    };
  };
  const auto dir_a = fresh_dir("nnvmc_recover_resume_a"), dir_b = fresh_dir("nnvmc_recover_resume_b");
  std::map<std::int64_t, int> tries_a, tries_b;
  Trainer a(tiny(dir_a, 7));
  a.set_energy_hook(first_try_fails(tries_a));
  EXPECT_EQ(a.run(false).failed_steps, 2);
  {
    Trainer b(tiny(dir_b, 3));
    b.run(false);
  }
  Trainer resumed(tiny(dir_b, 7), dir_b + "/checkpoint.h5");
  resumed.set_energy_hook(first_try_fails(tries_b));
  EXPECT_EQ(resumed.run(false).failed_steps, 2);
  const auto pa = module_state(*a.setup().wf), pb = module_state(*resumed.setup().wf);
  for (const auto& [k, v] : pa) EXPECT_TRUE(torch::equal(v, pb.at(k))) << k;
  EXPECT_TRUE(torch::equal(a.setup().molecules[0].sampler->positions(), resumed.setup().molecules[0].sampler->positions()));
  EXPECT_EQ(column(dir_a + "/result.h5", "train/energy"), column(dir_b + "/result.h5", "train/energy"));
}

TEST(FiniteWalkers, AtMostOnePercentOrOneWalkerMayBeLeftOut) {
  EXPECT_EQ(max_excluded_walkers(16), 1);
  EXPECT_EQ(max_excluded_walkers(1000), 10);
  auto e = torch::zeros({200}, torch::kFloat64);
  EXPECT_TRUE(finite_walkers(e).ok);
  e[3] = kNaN;
  e[9] = std::numeric_limits<double>::infinity();
  auto f = finite_walkers(e);
  EXPECT_TRUE(f.ok);
  EXPECT_EQ(f.excluded, 2);
  EXPECT_FALSE(f.mask[3].item<bool>());
  e[11] = -std::numeric_limits<double>::infinity();
  EXPECT_FALSE(finite_walkers(e).ok);
  EXPECT_FALSE(finite_walkers(torch::full({1}, kNaN, torch::kFloat64)).ok);  // nothing left
}

TEST(FiniteWalkers, ARankLeftWithoutWalkersFailsTheStepOnEveryRank) {
  // 300 walkers on 3 ranks (100 each, parallel::partition): 2 excluded walkers are within the
  // 1 % allowed, but if they are all of a rank's walkers that rank's optimizer would make no
  // collectives while the others do. Every rank sees the same global mask and decides alike.
  auto e = torch::zeros({300}, torch::kFloat64);
  e[150] = kNaN;
  e[250] = kNaN;
  EXPECT_TRUE(finite_walkers(e, 3).ok);
  EXPECT_EQ(finite_walkers(e, 3).empty_rank, -1);
  auto few = torch::zeros({6}, torch::kFloat64);  // ranks of 2 walkers; at most 1 excluded
  few[3] = kNaN;
  EXPECT_TRUE(finite_walkers(few, 3).ok);
  auto one_each = torch::zeros({3}, torch::kFloat64);  // one walker per rank: rank 1 loses its only one
  one_each[1] = kNaN;
  EXPECT_TRUE(finite_walkers(one_each, 1).ok);
  const auto f = finite_walkers(one_each, 3);
  EXPECT_FALSE(f.ok);
  EXPECT_EQ(f.empty_rank, 1);
}
