#include <gtest/gtest.h>

#include <cstdio>

#include "batching/held_memory.hpp"
#include "common/run_files.hpp"
#include "common/test_util.hpp"
#include "train/op_counts.hpp"
#include "train/trainer.hpp"

using namespace nnvmc;
using test::fresh_dir;

namespace {

/// A He run with `walkers` walkers, `layers` FermiNet layers and `steps` MH steps per iteration.
Config config(const std::string& type, int walkers, int layers, int steps, int iterations, const std::string& out) {
  std::string dims;
  for (int l = 0; l < layers; ++l) dims += std::string(l ? ", " : "") + "[8, 4]";
  Config c = parse_config(
      "system: {molecule: he}\n"
      "model: {ferminet: {hidden_dims: [" + dims + "], determinants: 2}}\n"
      "hamiltonian: {laplacian: forward}\n"
      "optim: {lr: 0.01, log_every: 1000}\n"
      "pretrain: {steps: 0}\n"
      "run: {seed: 3, checkpoint_every: 0}\n",
      {"optim.type=" + type}, "sync.yaml");
  c.sampler.walkers = walkers;
  c.sampler.steps_per_iteration = steps;
  c.sampler.burn_in = 0;
  c.hamiltonian.chunk_walkers = walkers;  // no chunk calibration in the counted runs
  c.optim.iterations = iterations;
  c.run.output = out;
  c.run.threads = 1;
  return c;
}

/// Operators of one training iteration: a run of two iterations minus a run of one (the same
/// setup, start and final checkpoint), so one-time work of the first iteration is excluded.
OpCounts one_iteration(const std::string& type, int walkers, int layers, int steps) {
  const auto run = [&](int iterations) {
    Trainer t(config(type, walkers, layers, steps, iterations, fresh_dir("nnvmc_sync_" + type)));
    return count_ops([&] { t.run(false); });
  };
  const auto one = run(1), two = run(2);
  OpCounts d;
  d.aten = two.aten - one.aten;
  d.syncs = two.syncs - one.syncs;
  for (const auto& [k, v] : two.by_name) {
    const auto it = one.by_name.find(k);
    d.by_name[k] = v - (it == one.by_name.end() ? 0 : it->second);
  }
  return d;
}

/// LiH with the small `type` ansatz, `walkers` walkers on one thread, its sampler in the emulated
/// graph mode (the code a CUDA device captures, run on the CPU).
VmcSetup graphed_sampler_setup(const std::string& type, int walkers, const std::string& memory_budget = "auto") {
  Config c = parse_config("system: {molecule: lih}\nmodel: {type: " + type + "}\n", {}, "graph.yaml");
  test::use_small_models(c.model);
  c.sampler.walkers = walkers;
  c.run.threads = 1;
  c.run.memory_budget = memory_budget;
  auto s = make_setup(c);
  s.molecules[0].sampler->set_graph_mode(parallel::GraphMode::emulated);
  return s;
}

}  // namespace

TEST(SyncCount, OneIterationSyncsAFewTimesWhateverTheWalkersLayersAndSteps) {
  // Sampler acceptance (one read per iteration), the count of non-finite local energies (one),
  // the optimizer's own decision (Adam/K-FAC: a fused finiteness check or δᵀg; SPRING: the
  // Cholesky status, its step length stays on the device), and the trainer's one fused
  // finiteness check of energies and parameters.
  for (const char* type : {"adam", "sr", "minsr", "spring", "kfac"}) {
    const auto small = one_iteration(type, 8, 1, 2), large = one_iteration(type, 16, 2, 4);
    std::printf("%-7s syncs per iteration %ld / %ld, aten ops %ld / %ld (8 walkers, 1 layer, 2 steps / 16, 2, 4)\n",
                type, small.syncs, large.syncs, small.aten, large.aten);
    for (const auto& [name, n] : small.by_name)
      if (is_sync_op(name) && n != 0) std::printf("        %ld x %s\n", n, name.c_str());
    EXPECT_GT(small.aten, 0) << type;
    EXPECT_LE(small.syncs, 4) << type;
    EXPECT_EQ(small.syncs, large.syncs) << type;
  }
}

TEST(SyncCount, SyncOpsAreTheOnesThatReadTheDevice) {
  EXPECT_TRUE(is_sync_op("aten::_local_scalar_dense"));
  EXPECT_TRUE(is_sync_op("aten::nonzero"));
  EXPECT_FALSE(is_sync_op("aten::mm"));
  const auto counts = count_ops([] {
    const auto x = torch::ones({3});
    (void)x.sum().item<double>();
    (void)torch::nonzero(x);
  });
  EXPECT_EQ(counts.syncs, 2);
}

// The launch estimate counts what a GPU would launch: a batched matrix product is one
// operator (not the CPU's loop of one product per matrix inside it), views are none.
TEST(SyncCount, LaunchesCountTopLevelOperatorsButNotViews) {
  EXPECT_TRUE(is_view_op("aten::view"));
  EXPECT_FALSE(is_view_op("aten::bmm"));
  const auto a = torch::randn({64, 5, 5}, torch::kFloat64);
  const auto counts = count_ops([&] {
    const auto b = torch::bmm(a, a);                  // 1 launch (64 products inside on the CPU)
    const auto c = b.view({64, 25}).transpose(0, 1);  // views only
    (void)(c * 2);                                     // 1 launch
  });
  EXPECT_EQ(counts.launches, 2);
  EXPECT_GE(counts.aten, 4);
}

// What a CUDA graph of the MH step needs: its body (proposal, log|ψ| of every ansatz, acceptance)
// never reads device data on the host. Runs of 1 and 4 graphed steps (the CPU's emulated graph,
// the code a CUDA device captures) have the same syncs: the one acceptance read per run().
TEST(SyncCount, TheGraphedMhStepOfEveryAnsatzNeverSyncs) {
  for (const char* type : {"ferminet", "psiformer", "paulinet", "orbformer"}) {
    auto s = graphed_sampler_setup(type, 8);
    auto& sampler = *s.molecules[0].sampler;
    const auto logabs = s.logabs_fn(0);
    const auto key = s.graph_key(0);
    sampler.initialize(logabs);
    sampler.run(logabs, 2, key);  // warm-up and capture
    const auto one = count_ops([&] { sampler.run(logabs, 1, key); });
    const auto four = count_ops([&] { sampler.run(logabs, 4, key); });
    for (const auto& [name, n] : four.by_name)
      if (is_sync_op(name) && n != 0) std::printf("%-9s %ld x %s in 4 steps\n", type, n, name.c_str());
    EXPECT_EQ(one.syncs, 1) << type;
    EXPECT_EQ(four.syncs, 1) << type;
    EXPECT_EQ(sampler.step_graph()->replays(), 6) << type;
    EXPECT_GT(four.aten, one.aten) << type;
  }
}

// The same for the local energy with the forward Laplacian: once captured, an evaluation of any
// ansatz reads nothing from the device on the host.
TEST(SyncCount, TheGraphedForwardLaplacianLocalEnergyOfEveryAnsatzNeverSyncs) {
  for (const char* type : {"ferminet", "psiformer", "paulinet", "orbformer"}) {
    Config c = parse_config("system: {molecule: lih}\nmodel: {type: " + std::string(type) + "}\n"
                            "hamiltonian: {laplacian: forward}\n", {}, "graph.yaml");
    test::use_small_models(c.model);
    c.sampler.walkers = 8;
    c.hamiltonian.chunk_walkers = 8;
    c.run.threads = 1;
    auto s = make_setup(c);
    auto& m = s.molecules[0];
    m.local_energy->set_graph_mode(parallel::GraphMode::emulated);
    m.sampler->initialize(s.logabs_fn(0));
    const auto key = s.graph_key(0);
    for (int i = 0; i < 2; ++i) (void)(*m.local_energy)(*s.wf, m.sampler->positions(), key);  // warm-up, capture
    const auto counts = count_ops([&] { (void)(*m.local_energy)(*s.wf, m.sampler->positions(), key); });
    for (const auto& [name, n] : counts.by_name)
      if (is_sync_op(name) && n != 0) std::printf("%-9s %ld x %s\n", type, n, name.c_str());
    EXPECT_EQ(counts.syncs, 0) << type;
    EXPECT_EQ(m.local_energy->graph()->replays(), 2) << type;
  }
}

// A refit of the sampler's chunk inside a graph body would be recorded by a CUDA capture and
// repeated by every replay (probe passes on every MH step). The memory held since the warm-up is
// that graph's own pool, so the chunk fitted before stays: the first replay (the emulated
// stand-in for the capture) does the same work as every later one.
TEST(SyncCount, EveryReplayOfTheGraphedMhStepDoesTheSameWorkAsTheCapture) {
  auto s = graphed_sampler_setup("ferminet", 16, "64MiB");  // a finite budget: the held ledger counts
  auto& sampler = *s.molecules[0].sampler;
  const auto logabs = s.logabs_fn(0);
  const auto key = s.graph_key(0);
  sampler.initialize(logabs);
  sampler.run(logabs, 1, key);  // warm-up: the graph's pool is held from now on
  const auto& chunk = *s.molecules[0].logabs_chunk;
  ASSERT_GT(batching::held_bytes(-1), chunk.held) << "the warm-up must leave more memory held than at the fit";
  const auto walkers = chunk.walkers;
  const auto first = count_ops([&] { sampler.run(logabs, 1, key); });  // "capture" and first replay
  const auto later = count_ops([&] { sampler.run(logabs, 1, key); });
  EXPECT_EQ(first.aten, later.aten);
  EXPECT_EQ(chunk.walkers, walkers);
  EXPECT_EQ(sampler.step_graph()->replays(), 2);
}
