/// Several molecules in one run (a transferable ansatz): per-molecule walkers and results, one
/// optimizer step over a batch of molecules, bit-identical resume, fine-tuning from a checkpoint
/// (model.init_from), and the refusal of several molecules by non-transferable ansätze.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <numeric>
#include <set>

#include <nlohmann/json.hpp>

#include "common/run_files.hpp"
#include "common/test_util.hpp"
#include "core/errors.hpp"
#include "train/molecule_batches.hpp"
#include "train/trainer.hpp"

using namespace nnvmc;
using test::column;
using test::fresh_dir;
namespace fs = std::filesystem;

namespace {
/// Two geometries of H2 (R = 1.4 and 2.0 bohr) with a tiny Orbformer.
Config two_h2_config(const std::string& out, int iterations, int walkers = 64) {
  Config c = parse_config(
      std::string(test::kTwoH2System) +
      "model: {type: orbformer}\n"
      "sampler: {walkers: 64, steps_per_iteration: 5, burn_in: 50, step_size: 0.3}\n"
      "hamiltonian: {laplacian: forward}\n"
      "optim: {type: adam, lr: 0.01, iterations: 60, log_every: 1000}\n"
      "eval: {steps: 0}\n"
      "pretrain: {steps: 0}\n"
      "run: {seed: 3, checkpoint_every: 0}\n",
      {}, "two_h2.yaml");
  c.model.orbformer = test::small_orbformer(2);
  c.sampler.walkers = walkers;
  c.optim.iterations = iterations;
  c.run.output = out;
  c.run.threads = 1;
  return c;
}

std::map<std::string, std::vector<double>> all_series(const std::string& file) {
  io::H5File f(file, io::H5File::Mode::read);
  std::map<std::string, std::vector<double>> out;
  for (const auto& name : f.list("/")) out[name] = column(file, name);
  return out;
}

/// NaN-aware equality of two series (rows of molecules left out of an iteration are NaN).
bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
  return true;
}
}  // namespace

TEST(MultiMolecule, TwoGeometriesOfH2TrainTogetherAndBothEnergiesFall) {
  const auto dir = fresh_dir("nnvmc_multi_h2");
  Trainer t(two_h2_config(dir, 60));
  ASSERT_EQ(t.setup().molecules.size(), 2u);
  EXPECT_EQ(t.setup().molecules[1].name(), "h2_long");
  EXPECT_NEAR(t.setup().molecules[1].system.atoms[1].position[2], 2.0, 0.0);
  t.run(false);
  const std::string file = dir + "/result.h5";
  ASSERT_EQ(column(file, "train/energy").size(), 60u);
  for (const char* name : {"h2_short", "h2_long"}) {
    const auto e = column(file, std::string("train/") + name + "/energy");
    ASSERT_EQ(e.size(), 60u) << name;
    for (double x : e) EXPECT_TRUE(std::isfinite(x)) << name;
    for (const char* s : {"variance", "acceptance", "step_size"})
      EXPECT_EQ(column(file, std::string("train/") + name + "/" + s).size(), 60u) << name << " " << s;
    const double first = test::mean_of(e, 0, 10), last = test::mean_of(e, 50, 60);
    EXPECT_LT(last, first - 0.05) << name << ": first 10 " << first << ", last 10 " << last;
    EXPECT_GT(last, -1.2) << name;  // variational (exact: -1.1745 at 1.4 bohr, -1.1381 at 2.0)
  }
  // The run-level energy is the mean of the two molecules' energies.
  const auto a = column(file, "train/h2_short/energy"), b = column(file, "train/h2_long/energy");
  EXPECT_NEAR(column(file, "train/energy")[7], 0.5 * (a[7] + b[7]), 1e-12);
  // Each molecule's step size adapted on its own chain.
  EXPECT_NE(t.setup().molecules[0].sampler->step_size(), t.setup().molecules[1].sampler->step_size());
}

TEST(MultiMolecule, PerMoleculeEvaluationGoesToResultsAndSummary) {
  const auto dir = fresh_dir("nnvmc_multi_eval");
  Config c = two_h2_config(dir, 2, 16);
  c.eval.steps = 4;
  c.eval.burn_in = 2;
  Trainer t(c);
  const auto out = t.run(true);
  ASSERT_EQ(out.evals.size(), 2u);
  const std::string file = dir + "/result.h5";
  const auto e0 = column(file, "eval/h2_short/energy"), e1 = column(file, "eval/h2_long/energy");
  ASSERT_EQ(e0.size(), 4u);
  ASSERT_EQ(e1.size(), 4u);
  EXPECT_NEAR(column(file, "eval/energy")[2], 0.5 * (e0[2] + e1[2]), 1e-12);
  nlohmann::json j;
  std::ifstream(dir + "/summary.json") >> j;
  ASSERT_EQ(j["molecules"].size(), 2u);
  EXPECT_EQ(j["molecules"][1]["molecule"], "h2_long");
  EXPECT_NEAR(j["molecules"][1]["energy"].get<double>(), out.evals[1].stats.mean, 1e-12);
  EXPECT_FALSE(j.contains("energy"));  // no single energy for several molecules
}

// optim.molecules_per_step = 1 of 2: each iteration trains one molecule, chosen from the seed and
// the iteration, so a resumed run draws the same ones; a molecule left out refreshes log|ψ|.
TEST(MultiMolecule, ResumedRunOfABatchOfMoleculesEqualsUninterruptedRun) {
  const auto dir_a = fresh_dir("nnvmc_multi_resume_a"), dir_b = fresh_dir("nnvmc_multi_resume_b");
  auto config = [](const std::string& dir, int iterations) {
    Config c = two_h2_config(dir, iterations, 16);
    c.optim.molecules_per_step = 1;
    c.sampler.burn_in = 4;
    c.run.checkpoint_every = 3;
    return c;
  };
  Trainer a(config(dir_a, 7));
  a.run(false);
  {
    Trainer b(config(dir_b, 4));  // "interrupted" after 4 iterations; last checkpoint at 3
    b.run(false);
  }
  Trainer resumed(config(dir_b, 7), dir_b + "/checkpoint.h5");
  resumed.run(false);
  const auto pa = module_state(*a.setup().wf), pb = module_state(*resumed.setup().wf);
  for (const auto& [k, v] : pa) EXPECT_TRUE(torch::equal(v, pb.at(k))) << k;
  for (size_t m = 0; m < 2; ++m)
    EXPECT_TRUE(torch::equal(a.setup().molecules[m].sampler->positions(), resumed.setup().molecules[m].sampler->positions()));
  auto sa = all_series(dir_a + "/result.h5"), sb = all_series(dir_b + "/result.h5");
  sa.erase("train/seconds");
  sb.erase("train/seconds");
  ASSERT_EQ(sa.size(), sb.size());
  for (const auto& [k, v] : sa) EXPECT_TRUE(same_bits(v, sb.at(k))) << k;
  // One molecule per iteration: each row of the per-molecule energies is NaN for exactly one.
  const auto e0 = sa.at("train/h2_short/energy"), e1 = sa.at("train/h2_long/energy");
  ASSERT_EQ(e0.size(), 7u);
  int trained0 = 0;
  for (size_t i = 0; i < e0.size(); ++i) {
    EXPECT_NE(std::isnan(e0[i]), std::isnan(e1[i])) << i;
    trained0 += !std::isnan(e0[i]);
  }
  EXPECT_GT(trained0, 0);
  EXPECT_LT(trained0, 7);
}

TEST(MultiMolecule, InitFromLoadsTheWeightsExactlyAndStartsAFreshRun) {
  const auto dir = fresh_dir("nnvmc_multi_init_a"), dir_ft = fresh_dir("nnvmc_multi_init_b");
  {
    Trainer t(two_h2_config(dir, 3, 16));
    t.run(false);
  }
  const Checkpoint trained = load_checkpoint(dir + "/checkpoint.h5");
  // Fine-tune on another molecule (LiH: other electrons), a different seed for its walkers.
  Config c = two_h2_config(dir_ft, 2, 16);
  c.system.molecules.reset();
  c.system.molecule = InlineYaml{"lih"};
  c.model.init_from = dir + "/checkpoint.h5";
  c.run.seed = 9;
  Trainer ft(c);
  const auto loaded = module_state(*ft.setup().wf);
  ASSERT_EQ(loaded.size(), trained.parameters.size());
  for (const auto& [k, v] : trained.parameters) EXPECT_TRUE(torch::equal(loaded.at(k), v)) << k;
  ft.run(false);
  const Checkpoint fine = load_checkpoint(dir_ft + "/checkpoint.h5");
  EXPECT_EQ(fine.iteration, 2);  // a new run: iterations counted from 0
  ASSERT_EQ(fine.molecules.size(), 1u);
  EXPECT_EQ(fine.molecules[0].system.name, "lih");
  EXPECT_EQ(fine.molecules[0].sampler.r.size(1), 4);  // walkers made for the new molecule
  // Adam's moments started from zero: after 2 steps its step count is 2, not 3 + 2.
  EXPECT_EQ(fine.optimizer.begin()->second.defined(), true);
  for (const auto& [k, v] : fine.optimizer)
    if (k.rfind("adam/step/", 0) == 0) {
      EXPECT_EQ(v.item<double>(), 2.0) << k;
    }
  // Other model options: the parameters do not fit, and the error names the key.
  Config other = c;
  other.run.output = fresh_dir("nnvmc_multi_init_c");
  other.model.orbformer.heads = 3;
  try {
    Trainer bad(other);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("model.init_from"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("changed: model.orbformer.heads "), std::string::npos) << e.what();
  }
  // Settings that leave trained parameters out are refused too, naming them (a user audit:
  // edge_features=false dropped the trained edge scales with an info line and fine-tuned another
  // wavefunction).
  Config no_edges = c;
  no_edges.run.output = fresh_dir("nnvmc_multi_init_e");
  no_edges.model.orbformer.edge_features = false;
  try {
    Trainer bad(no_edges);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("holds parameters this model does not have (electrons.edge_scale"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("model.orbformer.edge_features true -> false"), std::string::npos) << e.what();
  }
  // A missing file: the error names the key too.
  Config missing = c;
  missing.run.output = fresh_dir("nnvmc_multi_init_d");
  missing.model.init_from = dir + "/no_such_checkpoint.h5";
  try {
    Trainer bad(missing);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("model.init_from"), std::string::npos) << e.what();
  }
}

// The trainer's failure handling applies to the whole batch of molecules: a molecule whose local
// energies are all non-finite rejects the step of every molecule (all samplers back to their last
// good walkers, new moves on the retry); a few non-finite walkers of one molecule are left out of
// that molecule only.
TEST(MultiMolecule, FailuresRejectTheWholeBatchAndLeaveOutWalkersPerMolecule) {
  const auto dir = fresh_dir("nnvmc_multi_recover");
  Trainer t(two_h2_config(dir, 5, 16));
  std::map<std::int64_t, int> calls;  // energy-hook calls per iteration: molecule 0, 1, 0, 1, ...
  torch::Tensor first_try_0;
  t.set_energy_hook([&](std::int64_t it, torch::Tensor& e) {
    const int call = calls[it]++;
    if (it == 1 && call == 0) first_try_0 = t.setup().molecules[0].sampler->positions().clone();
    if (it == 1 && call == 1) e = torch::full_like(e, std::numeric_limits<double>::quiet_NaN());  // h2_long fails
    if (it == 1 && call == 2) {  // the retry: molecule 0 was restored and moved anew
      EXPECT_FALSE(torch::equal(t.setup().molecules[0].sampler->positions(), first_try_0));
    }
    if (it == 3 && call == 0) e[2] = std::numeric_limits<double>::quiet_NaN();  // one walker of h2_short
  });
  const auto out = t.run(false);
  EXPECT_EQ(out.iterations, 5);
  EXPECT_EQ(out.failed_steps, 1);
  EXPECT_EQ(calls[1], 4);  // two molecules, two tries
  EXPECT_EQ(out.excluded_walkers, 1);
  const std::string file = dir + "/result.h5";
  EXPECT_EQ(column(file, "train/excluded_walkers"), (std::vector<double>{0, 0, 0, 1, 0}));
  for (const char* name : {"h2_short", "h2_long"}) {
    const auto e = column(file, std::string("train/") + name + "/energy");
    ASSERT_EQ(e.size(), 5u) << name;
    for (double x : e) EXPECT_TRUE(std::isfinite(x)) << name;
  }
}

TEST(MultiMolecule, NonTransferableAnsatzeRejectTwoMolecules) {
  for (const char* type : {"ferminet", "psiformer", "paulinet", "hf"}) {
    Config c = parse_config("system: {molecules: [h2, {molecule: h2, geometry: [[0, 0, 0], [0, 0, 1.6]]}]}\n"
                            "model: {type: " + std::string(type) + "}\n",
                            {}, "two.yaml");
    test::use_small_models(c.model);
    try {
      (void)make_setup(c);
      FAIL() << type << ": expected ConfigError";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("system.molecules"), std::string::npos) << type << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find(type), std::string::npos) << e.what();
    }
  }
}

TEST(MoleculeBatches, DrawDistinctMoleculesFromTheSeedAndIteration) {
  EXPECT_EQ(molecules_for_iteration(3, 0, 1, 5), (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(molecules_for_iteration(3, 4, 1, 5), (std::vector<size_t>{0, 1, 2}));
  std::vector<int> count(10, 0);
  std::set<std::vector<size_t>> different;
  for (std::int64_t t = 0; t < 400; ++t) {
    const auto b = molecules_for_iteration(10, 3, 7, t);
    ASSERT_EQ(b.size(), 3u);
    EXPECT_TRUE(std::is_sorted(b.begin(), b.end()));
    EXPECT_EQ(std::set<size_t>(b.begin(), b.end()).size(), 3u);  // distinct
    EXPECT_EQ(b, molecules_for_iteration(10, 3, 7, t));          // a function of (seed, t)
    for (size_t i : b) ++count[i];
    different.insert(b);
  }
  for (int c : count) EXPECT_NEAR(c, 120, 45);  // every molecule trained about 3/10 of the time
  EXPECT_GT(different.size(), 50u);
  EXPECT_NE(molecules_for_iteration(10, 3, 7, 0), molecules_for_iteration(10, 3, 8, 0));
}

// A frame traj@3 is traj_3 in a run (names there are plain): `eval --molecule` finds it by
// either name, as the README promises (it knew traj_3 only). The frame's own name finds the
// frame, never another molecule whose run name its usable form happens to be (a user audit:
// traj@1 found an entry the user named traj_1, and traj@2 the second copy of frame 0, traj_2).
TEST(MultiMolecule, AMoleculeIsFoundByItsNameOrItsNameInTheRun) {
  VmcSetup s;
  s.molecules.resize(5);
  const std::pair<const char*, const char*> names[] = {
      {"h2", "h2"}, {"traj_3", "traj@3"}, {"traj_1", "traj_1"}, {"traj_1_2", "traj@1"}, {"traj_2", "traj"}};
  for (std::size_t i = 0; i < 5; ++i) {
    s.molecules[i].system.name = names[i].first;
    s.molecules[i].system.given_name = names[i].second;
  }
  EXPECT_EQ(s.molecule_index("traj_3"), 1u);
  EXPECT_EQ(s.molecule_index("traj@3"), 1u);
  EXPECT_EQ(s.molecule_index("h2"), 0u);
  EXPECT_EQ(s.molecule_index("traj_1"), 2u);
  EXPECT_EQ(s.molecule_index("traj@1"), 3u);
  EXPECT_THROW(s.molecule_index("traj@4"), InputError);
  EXPECT_THROW(s.molecule_index("traj@2"), InputError);  // (not in the run: traj_2 is a copy of frame 0)
}

// A run begun before molecule entries that change the charge or spin were named for it (the
// cation of [h2, {molecule: h2, charge: 1}] was "h2_2", now "h2_cation") resumes under its old
// names (a review: "names cannot change on resume" refused it).
TEST(MultiMolecule, ARunOfAnIonNamedTheOldWayResumesUnderItsNames) {
  const auto dir = fresh_dir("nnvmc_multi_ion_names");
  auto config = [&](const std::string& second) {
    Config c = two_h2_config(dir, 2, 16);
    c.system.molecules = InlineYaml{"[h2, " + second + "]"};
    return c;
  };
  {
    Trainer old(config("{molecule: h2, charge: 1, spin: 1, name: h2_2}"));
    old.run(false);
  }
  Config now = config("{molecule: h2, charge: 1, spin: 1}");
  now.optim.iterations = 3;
  Trainer resumed(now, dir + "/checkpoint.h5");
  EXPECT_EQ(resumed.setup().molecules[1].name(), "h2_2");
  resumed.run(false);
  Config renamed = config("{molecule: h2, charge: 1, spin: 1, name: other}");  // (a name given anew is refused)
  renamed.optim.iterations = 4;
  EXPECT_THROW(Trainer(renamed, dir + "/checkpoint.h5"), InputError);
}
