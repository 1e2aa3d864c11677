#include <gtest/gtest.h>

#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "batching/held_memory.hpp"
#include "common/run_files.hpp"
#include "common/test_util.hpp"
#include "io/hdf5_file.hpp"
#include "train/setup.hpp"
#include "train/checkpoint.hpp"
#include "train/evaluate.hpp"
#include "train/trainer.hpp"
#include "parallel/walker_threads.hpp"
#include "batching/cuda_runtime.hpp"
#include "core/errors.hpp"
#include "train/stop_request.hpp"

using namespace nnvmc;
using test::column;
using test::fresh_dir;
namespace fs = std::filesystem;

namespace {
/// A tiny He run that takes well under a second per iteration.
Config tiny_config(const std::string& out, int iterations) {
  Config c = parse_config(
      "system: {molecule: he}\n"
      "model: {ferminet: {hidden_dims: [[8, 4], [8, 4]], determinants: 2}}\n"
      "sampler: {walkers: 16, steps_per_iteration: 2, burn_in: 5, step_size: 0.3}\n"
      "optim: {iterations: 1, log_every: 1000}\n"
      "eval: {steps: 3, burn_in: 2}\n"
      "pretrain: {steps: 0}\n"
      "run: {seed: 11, checkpoint_every: 2}\n",
      {}, "tiny.yaml");
  c.optim.iterations = iterations;
  c.run.output = out;
  c.run.threads = 1;
  return c;
}
}  // namespace

TEST(Trainer, ResumedRunEqualsUninterruptedRun) {
  const auto dir_a = fresh_dir("nnvmc_resume_a"), dir_b = fresh_dir("nnvmc_resume_b");
  Trainer a(tiny_config(dir_a, 6));
  a.run(false);
  {
    Trainer b(tiny_config(dir_b, 3));  // "interrupted" after 3 iterations
    b.run(false);
  }
  Trainer resumed(tiny_config(dir_b, 6), dir_b + "/checkpoint.h5");
  resumed.run(false);
  const auto pa = module_state(*a.setup().wf), pb = module_state(*resumed.setup().wf);
  for (const auto& [k, v] : pa) EXPECT_TRUE(torch::equal(v, pb.at(k))) << k;
  EXPECT_TRUE(torch::equal(a.setup().molecules[0].sampler->positions(), resumed.setup().molecules[0].sampler->positions()));
  const auto ea = column(dir_a + "/result.h5", "train/energy");
  const auto eb = column(dir_b + "/result.h5", "train/energy");
  ASSERT_EQ(ea.size(), 6u);
  EXPECT_EQ(ea, eb);  // bit-identical energies, no duplicated rows
}

// A checkpoint from before run ids (none in it) resumes, and the run keeps the id its result.h5
// may already have from an earlier resume that died before its first checkpoint: drawing a new
// one each time would refuse every later resume as "another run's".
TEST(Trainer, ACheckpointWithoutRunIdTakesTheOneItsResultFileHas) {
  const auto dir = fresh_dir("nnvmc_resume_old_id");
  {
    Trainer t(tiny_config(dir, 2));
    t.run(false);
  }
  Checkpoint old = load_checkpoint(dir + "/checkpoint.h5");
  ASSERT_FALSE(old.run_id.empty());
  old.run_id.clear();  // as written before 2026-12-05: format version 3, no run id
  save_checkpoint(dir + "/checkpoint.h5", old);
  io::H5File(dir + "/checkpoint.h5", io::H5File::Mode::append).set_attr("version", "3");
  {
    io::H5File results(dir + "/result.h5", io::H5File::Mode::append);
    results.set_attr("run_id", "0123456789abcdef");  // an earlier resume's, never checkpointed
  }
  {
    Trainer resumed(tiny_config(dir, 4), dir + "/checkpoint.h5");
    resumed.run(false);
  }
  EXPECT_EQ(load_checkpoint(dir + "/checkpoint.h5").run_id, "0123456789abcdef");
  EXPECT_EQ(io::H5File(dir + "/result.h5", io::H5File::Mode::read).attr("run_id"), "0123456789abcdef");
}

// On two threads the sampler's wavefunction evaluations and the local energies run on one part
// of the walkers per thread: the run is the one libtorch's intra-op threads alone give, to
// rounding (parts may block their GEMMs differently).
TEST(Trainer, WalkerThreadsLeaveTheTrainingRunUnchanged) {
  std::map<bool, std::vector<double>> energies;
  std::map<bool, torch::Tensor> positions;
  for (bool walker_threads : {false, true}) {
    const auto dir = fresh_dir(walker_threads ? "nnvmc_walker_threads" : "nnvmc_intra_op_threads");
    Config c = tiny_config(dir, 3);
    c.sampler.walkers = 64;
    c.run.threads = 2;
    c.run.walker_threads = walker_threads;
    Trainer t(c);
    t.run(false);
    energies[walker_threads] = column(dir + "/result.h5", "train/energy");
    positions[walker_threads] = t.setup().molecules[0].sampler->positions().clone();
  }
  torch::set_num_threads(1);
  parallel::set_walker_threads(true);
  ASSERT_EQ(energies[true].size(), 3u);
  for (std::size_t i = 0; i < 3; ++i)
    EXPECT_NEAR(energies[true][i], energies[false][i], 1e-10 * std::abs(energies[false][i])) << "iteration " << i;
  EXPECT_LT((positions[true] - positions[false]).abs().max().item<double>(), 1e-10);
}

// run.cuda_graphs on a CUDA device replays captured graphs of the MH step and the local
// energy. The CPU runs the same code in the emulated graph mode: the training run, its
// checkpoint and its final evaluation are the eager run's, bit for bit.
TEST(Trainer, GraphedStepsAndEnergiesLeaveTheTrainingRunUnchanged) {
  std::map<bool, std::vector<double>> energies;
  std::map<bool, torch::Tensor> positions;
  std::map<bool, double> final_energy;
  for (bool graphs : {false, true}) {
    const auto dir = fresh_dir(graphs ? "nnvmc_graphs_on" : "nnvmc_graphs_off");
    Config c = tiny_config(dir, 4);
    c.run.cuda_graphs = graphs;  // on the CPU: no effect by itself
    Trainer t(c);
    if (graphs) {
      t.setup().molecules[0].sampler->set_graph_mode(parallel::GraphMode::emulated);
      t.setup().molecules[0].local_energy->set_graph_mode(parallel::GraphMode::emulated);
    }
    final_energy[graphs] = t.run(true).final_eval.stats.mean;
    energies[graphs] = column(dir + "/result.h5", "train/energy");
    positions[graphs] = t.setup().molecules[0].sampler->positions().clone();
    if (graphs) {
      EXPECT_GT(t.setup().molecules[0].sampler->step_graph()->replays(), 10);
      EXPECT_GT(t.setup().molecules[0].local_energy->graph()->replays(), 3);
    }
  }
  ASSERT_EQ(energies[true].size(), 4u);
  EXPECT_EQ(energies[true], energies[false]);
  EXPECT_TRUE(torch::equal(positions[true], positions[false]));
  EXPECT_EQ(final_energy[true], final_energy[false]);
  {  // run.cuda_graphs as a user sets it on the CPU (no emulation): the eager run
    const auto dir = fresh_dir("nnvmc_graphs_as_set");
    Config c = tiny_config(dir, 4);
    c.run.cuda_graphs = true;
    Trainer t(c);
    EXPECT_EQ(t.run(true).final_eval.stats.mean, final_energy[false]);
    EXPECT_EQ(column(dir + "/result.h5", "train/energy"), energies[false]);
  }
}

TEST(Trainer, TinyTrainingStaysFiniteAndWritesResults) {
  const auto dir = fresh_dir("nnvmc_tiny");
  Trainer t(tiny_config(dir, 4));
  const auto out = t.run(true);
  EXPECT_FALSE(out.interrupted);
  for (double e : column(dir + "/result.h5", "train/energy")) EXPECT_TRUE(std::isfinite(e));
  EXPECT_TRUE(std::isfinite(out.final_eval.stats.mean));
  EXPECT_TRUE(fs::exists(dir + "/summary.json"));
  EXPECT_TRUE(fs::exists(dir + "/config.yaml"));
  EXPECT_TRUE(fs::exists(dir + "/checkpoint.h5"));
  EXPECT_FALSE(fs::exists(dir + "/checkpoint.h5.tmp"));
}

TEST(Trainer, StopRequestWritesACheckpointAndStops) {
  const auto dir = fresh_dir("nnvmc_stop");
  Trainer t(tiny_config(dir, 50));
  // a signal arriving during iteration 1 (the handler sets the request)
  t.set_iteration_hook([](std::int64_t it) {
    if (it == 1) Trainer::request_stop(true);
    return StopAction::none;
  });
  const auto out = t.run(true);
  Trainer::request_stop(false);
  EXPECT_TRUE(out.interrupted);
  EXPECT_EQ(load_checkpoint(dir + "/checkpoint.h5").iteration, 1);
}

// The stages outside the training loop stop at their next step too (they used to run to their
// end whatever the signals): HF pretraining and the burn-in, before the first checkpoint, with
// nothing to resume; the final evaluation, after the last checkpoint, naming it.
TEST(Trainer, AStopRequestEndsPretrainingBurnInAndTheFinalEvaluationAtTheirNextStep) {
  auto expect_interrupted = [](const std::function<void()>& f, const std::string& stage) {
    try {
      f();
      ADD_FAILURE() << "expected Interrupted in " << stage;
    } catch (const Interrupted& e) {
      EXPECT_NE(std::string(e.what()).find(stage), std::string::npos) << e.what();
    }
    Trainer::request_stop(false);
  };
  const auto dir = fresh_dir("nnvmc_stop_stages");
  Config pretraining = tiny_config(dir, 2);
  pretraining.pretrain.steps = 1000000;
  pretraining.pretrain.basis = "sto-3g";
  Trainer::request_stop(true);
  expect_interrupted([&] { Trainer t(pretraining); }, "HF pretraining");
  Config c = tiny_config(dir, 2);
  c.run.overwrite = true;
  c.sampler.burn_in = 100000000;
  {
    Trainer t(c);
    Trainer::request_stop(true);
    expect_interrupted([&] { t.run(true); }, "burn-in");
  }
  c.sampler.burn_in = 5;
  c.eval.steps = 100000000;
  Trainer t(c);
  t.set_iteration_hook([](std::int64_t it) {
    if (it == 2) Trainer::request_stop(true);  // after the last iteration, before the evaluation
    return StopAction::none;
  });
  expect_interrupted([&] { t.run(true); }, "during the end of training (the final evaluation was not begun)");
  EXPECT_EQ(load_checkpoint(dir + "/checkpoint.h5").iteration, 2);
  // the evaluation itself (of a run, or by `nnvmc eval`) stops at its next step, naming it
  VmcSetup s = make_setup(c, SetupPurpose::evaluation);
  s.molecules[0].sampler->initialize(s.logabs_fn(0));
  StageTimers timers;
  Trainer::request_stop(true);
  expect_interrupted([&] { (void)evaluate(s, c.eval, timers); }, "the evaluation's burn-in");
}

// The first SIGINT/SIGTERM asks for a stop; the handler then restores the default action, so a
// second signal ends a process that is stuck in a long step.
TEST(Trainer, TheFirstSignalRequestsAStopAndASecondWouldEndTheProcess) {
  struct sigaction old_int {};
  sigaction(SIGINT, nullptr, &old_int);
  Trainer::install_signal_handlers();
  struct sigaction installed {};
  sigaction(SIGINT, nullptr, &installed);
  EXPECT_NE(installed.sa_handler, SIG_DFL);
  std::raise(SIGINT);
  EXPECT_TRUE(stop_requested());
  struct sigaction after {};
  sigaction(SIGINT, nullptr, &after);
  EXPECT_EQ(after.sa_handler, SIG_DFL);
  Trainer::request_stop(false);
  sigaction(SIGINT, &old_int, nullptr);
  std::signal(SIGTERM, SIG_DFL);
}

// One process per output directory: a second trainer on a directory in use is refused (exit 2)
// before it moves or writes anything; the lock goes with the first trainer.
TEST(Trainer, ASecondRunOnAnOutputDirectoryInUseIsRefused) {
  const auto dir = fresh_dir("nnvmc_locked");
  Config c = tiny_config(dir, 1);
  auto first = std::make_unique<Trainer>(c);
  c.run.overwrite = true;
  try {
    Trainer second(c);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("in use by another nnvmc process"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::exists(dir + "/config.yaml"));  // the first run's files are untouched
  first->run(false);
  first.reset();
  Trainer again(c);  // free again
}

// A --force start that stopped before its first checkpoint leaves the old run as *.previous; a
// plain new run must not delete it (it used to, at its first checkpoint), and --resume says where it is.
TEST(Trainer, ARunSetAsideByAnUnfinishedForceStartIsNotDeletedByANewRun) {
  const auto dir = fresh_dir("nnvmc_set_aside");
  {
    Trainer t(tiny_config(dir, 1));
    t.run(false);
  }
  for (const char* f : {"checkpoint.h5", "result.h5", "config.yaml"}) fs::rename(dir + "/" + f, dir + "/" + f + ".previous");
  try {
    Trainer t(tiny_config(dir, 1));
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("*.previous"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::exists(dir + "/checkpoint.h5.previous"));
}

TEST(Trainer, ClippingKeepsValuesWithinWidthOfTheMedian) {
  auto e = torch::tensor({-1.0, -1.1, -0.9, -1.0, 50.0, -80.0}, torch::kFloat64);
  const auto c = clip_local_energies(e, 2.0);
  const double median = -1.0;  // of -80, -1.1, -1, -1, -0.9, 50
  const double mad = (e - median).abs().mean().item<double>();
  EXPECT_LE(c.max().item<double>(), median + 2 * mad + 1e-12);
  EXPECT_GE(c.min().item<double>(), median - 2 * mad - 1e-12);
  EXPECT_EQ(c[0].item<double>(), -1.0);
}

TEST(Trainer, ClippingCentresAnEvenCountOnTheMeanOfItsTwoMiddleValues) {
  const auto e = torch::tensor({3.0, -100.0, 1.0, 100.0, 0.0, 2.0}, torch::kFloat64);
  const auto c = clip_local_energies(e, 1e-9);  // a width of ~0: every value becomes the median
  EXPECT_NEAR(c.min().item<double>(), 1.5, 1e-6);
  EXPECT_NEAR(c.max().item<double>(), 1.5, 1e-6);
}

// run.device: cuda loads libtorch's CUDA library on demand; on a machine with a GPU the
// options say cuda, without one the error names run.device.
TEST(Setup, CudaDeviceLoadsTheCudaRuntimeOrSaysThereIsNone) {
  Config c = parse_config("", {"run.device=cuda"}, "test");
  if (batching::cuda_device_count() > 0) {
    EXPECT_TRUE(tensor_options(c).device().is_cuda());
  } else {
    try {
      (void)tensor_options(c);
      FAIL() << "expected InputError without a CUDA device";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("run.device"), std::string::npos) << e.what();
    }
  }
}

namespace {
/// Every dataset of a results file by name (float64 columns).
std::map<std::string, std::vector<double>> all_series(const std::string& file) {
  io::H5File f(file, io::H5File::Mode::read);
  std::map<std::string, std::vector<double>> out;
  for (const auto& name : f.list("/")) out[name] = column(file, name);
  return out;
}
}  // namespace

// A run that ended (with its final evaluation and summary), resumed for more iterations, has the
// same result.h5 as a run that trained that long in one go: training rows up to the checkpoint,
// one pretraining row per series, and only the new final evaluation.
TEST(Trainer, ResumedRunHasEverySeriesOfAnUninterruptedRun) {
  const auto dir_a = fresh_dir("nnvmc_series_a"), dir_b = fresh_dir("nnvmc_series_b");
  auto config = [](const std::string& dir, int iterations) {
    Config c = tiny_config(dir, iterations);
    c.pretrain.steps = 2;
    c.run.checkpoint_every = 0;  // only at the end: B resumes from its final checkpoint
    return c;
  };
  {
    Trainer a(config(dir_a, 5));
    a.run(true);
  }
  {
    Trainer b(config(dir_b, 3));
    b.run(true);  // a complete shorter run: eval/energy and summary.json written
  }
  ASSERT_TRUE(fs::exists(dir_b + "/summary.json"));
  {
    Trainer resumed(config(dir_b, 5), dir_b + "/checkpoint.h5");
    EXPECT_TRUE(fs::exists(dir_b + "/summary.json"));  // (removed at the resume's first write, with the evaluation)
    resumed.run(true);
  }
  auto a = all_series(dir_a + "/result.h5"), b = all_series(dir_b + "/result.h5");
  a.erase("train/seconds");
  b.erase("train/seconds");
  for (const auto* name : {"train/energy", "eval/energy", "pretrain/final_loss"}) EXPECT_TRUE(a.count(name)) << name;
  EXPECT_EQ(a.at("train/energy").size(), 5u);
  EXPECT_EQ(a.at("pretrain/final_loss").size(), 1u);
  EXPECT_EQ(a.at("eval/energy").size(), 3u);
  EXPECT_EQ(a, b);  // the same series, bit for bit
}

// A resume stopped before its first iteration, stopped in a final evaluation with nothing to
// train, or whose first steps all fail writes nothing: each rewrote the checkpoint and cut the
// run's files back (summary.json and the final evaluation of a finished run gone).
TEST(Trainer, AResumeThatTrainsNothingChangesNothing) {
  const auto dir = fresh_dir("nnvmc_stopped_resume");
  {
    Trainer a(tiny_config(dir, 2));
    a.run(true);
  }
  const auto before = test::file_bytes(dir);
  ASSERT_EQ(before.count("summary.json"), 1u);
  {
    Trainer resumed(tiny_config(dir, 4), dir + "/checkpoint.h5");
    Trainer::request_stop(true);
    EXPECT_THROW(resumed.run(true), Interrupted);
    Trainer::request_stop(false);
  }
  EXPECT_TRUE(test::file_bytes(dir) == before);
  // nothing left to train, stopped in the final evaluation: the earlier evaluation stays (it was
  // cut away, with summary.json, before the new one was measured)
  {
    Config again = tiny_config(dir, 2);
    again.eval.burn_in = 100000000;
    Trainer resumed(again, dir + "/checkpoint.h5");
    resumed.set_iteration_hook([](std::int64_t) {
      Trainer::request_stop(true);  // (at the end of training, before the evaluation begins)
      return StopAction::none;
    });
    EXPECT_THROW(resumed.run(true), Interrupted);
    Trainer::request_stop(false);
  }
  EXPECT_TRUE(test::file_bytes(dir) == before);
  // ten failed steps of a resume that trained nothing leave the run as it was too
  {
    Trainer resumed(tiny_config(dir, 4), dir + "/checkpoint.h5");
    resumed.set_energy_hook([](std::int64_t, torch::Tensor& e) { e = torch::full_like(e, std::nan("")); });
    try {
      resumed.run(true);
      ADD_FAILURE() << "expected NumericalError";
    } catch (const NumericalError& e) {
      EXPECT_NE(std::string(e.what()).find("the run's checkpoint (iteration 2) and files are as they were"),
                std::string::npos)
          << e.what();
    }
  }
  EXPECT_TRUE(test::file_bytes(dir) == before);
}

// A --force start whose first steps all fail trained nothing: the run it was to replace comes
// back (its iteration-0 checkpoint used to retire that run). Without a run to put back, the
// iteration-0 checkpoint is kept: it holds the pretraining and burn-in, to resume with a
// smaller optim.lr.
TEST(Trainer, AForcedStartWhoseFirstStepsAllFailPutsTheReplacedRunBack) {
  const auto dir = fresh_dir("nnvmc_forced_failing");
  {
    Trainer a(tiny_config(dir, 2));
    a.run(true);
  }
  const auto before = test::file_bytes(dir);
  const auto nan_energies = [](std::int64_t, torch::Tensor& e) { e = torch::full_like(e, std::nan("")); };
  Config forced = tiny_config(dir, 2);
  forced.run.overwrite = true;
  forced.optim.max_consecutive_failures = 2;
  {
    Trainer t(forced);
    t.set_energy_hook(nan_energies);
    try {
      t.run(true);
      ADD_FAILURE() << "expected NumericalError";
    } catch (const NumericalError& e) {
      EXPECT_NE(std::string(e.what()).find("the run --force set aside is put back"), std::string::npos) << e.what();
    }
  }
  EXPECT_TRUE(test::file_bytes(dir) == before);
  const auto fresh = fresh_dir("nnvmc_fresh_failing");
  Config plain = tiny_config(fresh, 2);
  plain.optim.max_consecutive_failures = 2;
  {
    Trainer t(plain);
    t.set_energy_hook(nan_energies);
    EXPECT_THROW(t.run(true), NumericalError);
  }
  EXPECT_EQ(load_checkpoint(fresh + "/checkpoint.h5").iteration, 0);
}

TEST(Trainer, ANewRunRefusesAnOutputDirectoryHoldingARunUnlessAskedToOverwrite) {
  const auto dir = fresh_dir("nnvmc_overwrite");
  {
    Trainer t(tiny_config(dir, 2));
    t.run(false);
  }
  const auto before = fs::last_write_time(dir + "/checkpoint.h5");
  try {
    Trainer again(tiny_config(dir, 2));
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("run.output"), std::string::npos) << what;
    EXPECT_NE(what.find("--resume"), std::string::npos) << what;
    EXPECT_NE(what.find("--force"), std::string::npos) << what;
  }
  EXPECT_EQ(fs::last_write_time(dir + "/checkpoint.h5"), before);  // untouched
  Config c = tiny_config(dir, 1);
  c.run.overwrite = true;
  Trainer fresh(c);
  EXPECT_FALSE(fs::exists(dir + "/checkpoint.h5"));  // the old run is gone before the new one starts
  fresh.run(false);
  EXPECT_EQ(load_checkpoint(dir + "/checkpoint.h5").iteration, 1);
  EXPECT_EQ(column(dir + "/result.h5", "train/energy").size(), 1u);
}

TEST(Trainer, AnUnwritableOutputDirectoryIsAnInputErrorNamingRunOutput) {
  // A path below a regular file cannot be created, whoever runs the test (root included).
  const auto file = fresh_dir("nnvmc_not_a_dir");
  std::ofstream(file) << "a file";
  for (const auto& out : {file + "/run", file}) {
    try {
      Trainer t(tiny_config(out, 1));
      FAIL() << "expected InputError for " << out;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("run.output"), std::string::npos) << e.what();
    }
  }
  fs::remove(file);
}

// run.dtype: float32 on the CPU with every optimizer family (the GPU script runs FermiNet with
// SPRING and K-FAC in float32; here the same code runs in CI): energies stay finite, the
// parameters stay float32 and move.
TEST(Trainer, Float32TrainingRunsWithEveryOptimizerOnTheCpu) {
  for (const std::string type : {"adam", "sr", "minsr", "spring", "kfac"}) {
    const auto dir = fresh_dir("nnvmc_f32_" + type);
    Config c = tiny_config(dir, 3);
    c.run.dtype = "float32";
    c.optim.type = type;
    c.hamiltonian.laplacian = "forward";
    Trainer t(c);
    const auto before = module_state(*t.setup().wf);
    t.run(false);
    const auto e = column(dir + "/result.h5", "train/energy");
    ASSERT_EQ(e.size(), 3u) << type;
    for (double x : e) EXPECT_TRUE(std::isfinite(x)) << type;
    double moved = 0;
    for (const auto& [k, v] : module_state(*t.setup().wf)) {
      EXPECT_EQ(v.scalar_type(), torch::kFloat32) << type << " " << k;
      moved = std::max(moved, (v - before.at(k)).abs().max().item<double>());
    }
    EXPECT_GT(moved, 0.0) << type;
  }
}

// The sampler's log|ψ| pass is fitted to run.memory_budget like the local energy: with a budget
// too small for all walkers at once it runs in chunks, and the values are those of one pass.
TEST(Setup, SamplerLogPsiRunsInChunksThatFitTheMemoryBudget) {
  Config small = tiny_config(fresh_dir("nnvmc_logpsi_chunks"), 1);
  small.sampler.walkers = 512;
  small.run.memory_budget = "256KiB";
  Config roomy = small;
  roomy.run.memory_budget = "auto";
  const auto a = make_setup(small), b = make_setup(roomy);
  torch::manual_seed(3);
  const auto r = torch::randn({512, 2, 3}, torch::kFloat64);
  torch::NoGradGuard ng;
  const auto la = a.logabs_fn(0)(r), lb = b.logabs_fn(0)(r);
  const auto chunk = a.molecules[0].logabs_chunk->walkers;
  EXPECT_GT(chunk, 1);
  EXPECT_LT(chunk, 512);
  EXPECT_GE(b.molecules[0].logabs_chunk->walkers, 512);
  EXPECT_TRUE(torch::allclose(la, lb, 1e-12, 1e-12)) << (la - lb).abs().max().item<double>();
}

// Memory held for the rest of the run (a captured CUDA graph's pool; emulated here on the CPU)
// after the sampler's chunk was fitted leaves less for its passes: the next pass fits it again.
TEST(Setup, SamplerLogPsiChunkIsFittedAgainWhenHeldMemoryGrows) {
  Config c = tiny_config(fresh_dir("nnvmc_logpsi_held"), 1);
  c.sampler.walkers = 512;
  c.run.memory_budget = "512KiB";
  const auto s = make_setup(c);
  torch::manual_seed(3);
  const auto r = torch::randn({512, 2, 3}, torch::kFloat64);
  torch::NoGradGuard ng;
  const auto fn = s.logabs_fn(0);
  const auto l0 = fn(r);
  const auto first = s.molecules[0].logabs_chunk->walkers;
  ASSERT_GT(first, 1);
  const int token = 0;
  batching::hold_memory(-1, &token, 256 * 1024);
  const auto l1 = fn(r);
  const auto second = s.molecules[0].logabs_chunk->walkers;
  batching::release_memory(-1, &token);
  EXPECT_LT(second, first);
  EXPECT_GE(second, 1);
  EXPECT_TRUE(torch::allclose(l0, l1, 1e-12, 1e-12));
}

// A molecule whose single walker does not fit the budget is a BudgetError naming the key and the
// molecule when the run is set up (on the CPU the measurement stops at the budget: a molecule
// too large for the machine is refused, not killed by the kernel).
TEST(Setup, AWalkerLargerThanTheMemoryBudgetIsABudgetErrorNamingKeyAndMolecule) {
  Config c = tiny_config(fresh_dir("nnvmc_walker_too_big"), 1);
  c.run.memory_budget = "4KiB";
  c.sampler.walkers = 16;
  try {
    (void)make_setup(c);
    FAIL() << "expected BudgetError";
  } catch (const BudgetError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("run.memory_budget = 4.00 KiB is too small for one walker of 'he'"), std::string::npos) << what;
  }
}
