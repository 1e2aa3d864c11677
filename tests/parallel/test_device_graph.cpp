/// @file test_device_graph.cpp
/// DeviceGraph's call sequence (warm-up, capture, replay, a new key captures again) in the
/// emulated mode the CPU runs, the eager fallback, and the CUDA plugin's linkage and error path.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <memory>
#include <stdexcept>

#include "batching/held_memory.hpp"
#include "common/units.hpp"
#include "parallel/device_graph.hpp"

using namespace nnvmc::parallel;

namespace {
const c10::Device kCpu(c10::DeviceType::CPU);
int dummy_a = 0, dummy_b = 0;
}  // namespace

TEST(DeviceGraph, EmulatedGraphWarmsUpThenCapturesThenReplaysTheKeptBody) {
  DeviceGraph graph(GraphMode::emulated, kCpu, "test body");
  int first = 0, later = 0;
  const GraphKey key = {&dummy_a};
  graph.run(key, [&] { ++first; });  // warm-up: runs eagerly
  EXPECT_EQ(first, 1);
  EXPECT_EQ(graph.captures(), 0);
  graph.run(key, [&] { ++first; });  // captured (kept), then replayed once
  EXPECT_EQ(first, 2);
  EXPECT_EQ(graph.captures(), 1);
  EXPECT_EQ(graph.replays(), 1);
  // Same key: the kept body runs, not the one passed (a CUDA replay does not call the body).
  graph.run(key, [&] { ++later; });
  EXPECT_EQ(first, 3);
  EXPECT_EQ(later, 0);
  EXPECT_EQ(graph.replays(), 2);
}

TEST(DeviceGraph, ANewKeyWarmsUpAndCapturesAgain) {
  DeviceGraph graph(GraphMode::emulated, kCpu, "test body");
  int a = 0, b = 0;
  for (int i = 0; i < 3; ++i) graph.run({&dummy_a}, [&] { ++a; });
  for (int i = 0; i < 3; ++i) graph.run({&dummy_b}, [&] { ++b; });
  EXPECT_EQ(a, 3);
  EXPECT_EQ(b, 3);
  EXPECT_EQ(graph.captures(), 2);
  EXPECT_EQ(graph.replays(), 4);
}

TEST(DeviceGraph, CaptureOnACpuDeviceRunsEagerly) {
  DeviceGraph graph(GraphMode::captured, kCpu, "test body");
  EXPECT_EQ(graph.mode(), GraphMode::eager);
  int n = 0;
  for (int i = 0; i < 4; ++i) graph.run({&dummy_a}, [&] { ++n; });
  EXPECT_EQ(n, 4);
  EXPECT_EQ(graph.captures(), 0);
  EXPECT_TRUE(graph.failure().empty());
}

namespace {
using nnvmc::test::kMiB;
/// A body whose temporaries peak at `mib` MiB (what a capture of it keeps in the pool).
std::function<void()> body_of(std::int64_t mib) {
  return [mib] { (void)torch::empty({mib * kMiB / 8}, torch::kFloat64).fill_(0.5); };
}
}  // namespace

// Graphs of a device share one memory pool that a capture keeps for its replays: from its
// warm-up call a graph accounts the pool as the larger of the pool so far and its own peak,
// in the held-memory ledger that chunk planners leave out of the budget; the entry goes with
// the device's last graph. Emulated graphs keep that account on the CPU.
TEST(DeviceGraph, EmulatedGraphsAccountTheirWarmUpPeakAsTheSharedPoolUntilTheLastGoes) {
  ASSERT_EQ(DeviceGraph::pool_bytes(kCpu), 0);
  auto a = std::make_unique<DeviceGraph>(GraphMode::emulated, kCpu, "a");
  auto b = std::make_unique<DeviceGraph>(GraphMode::emulated, kCpu, "b");
  EXPECT_EQ(nnvmc::batching::held_bytes(-1), 0);  // nothing before a warm-up
  for (int i = 0; i < 3; ++i) a->run({&dummy_a}, body_of(4));
  EXPECT_GE(a->warmup_peak_bytes(), 4 * kMiB);
  EXPECT_LT(a->warmup_peak_bytes(), 5 * kMiB);
  EXPECT_EQ(DeviceGraph::pool_bytes(kCpu), a->warmup_peak_bytes());
  EXPECT_EQ(nnvmc::batching::held_bytes(-1), a->warmup_peak_bytes());
  for (int i = 0; i < 3; ++i) b->run({&dummy_b}, body_of(2));  // fits in what a's capture freed
  EXPECT_EQ(DeviceGraph::pool_bytes(kCpu), a->warmup_peak_bytes());
  b->run({&dummy_a}, body_of(6));  // a new key: warms up again, the pool grows to it
  EXPECT_EQ(DeviceGraph::pool_bytes(kCpu), b->warmup_peak_bytes());
  EXPECT_GE(b->warmup_peak_bytes(), 6 * kMiB);
  a.reset();  // b still uses the pool
  EXPECT_EQ(nnvmc::batching::held_bytes(-1), b->warmup_peak_bytes());
  b.reset();
  EXPECT_EQ(DeviceGraph::pool_bytes(kCpu), 0);
  EXPECT_EQ(nnvmc::batching::held_bytes(-1), 0);
}

// A warm-up whose body throws: the error propagates, nothing is accounted, and the next call
// warms up again (it does not capture a body that never ran to the end).
TEST(DeviceGraph, AWarmUpThatThrowsLeavesNoAccountAndTheNextCallWarmsUpAgain) {
  DeviceGraph graph(GraphMode::emulated, kCpu, "test body");
  EXPECT_THROW(graph.run({&dummy_a}, [] {
    (void)torch::empty({kMiB / 8}, torch::kFloat64).fill_(1.0);
    throw std::runtime_error("the body failed");
  }),
               std::runtime_error);
  EXPECT_EQ(nnvmc::batching::held_bytes(-1), 0);
  int n = 0;
  graph.run({&dummy_a}, [&] { ++n; });  // warm-up again
  EXPECT_EQ(graph.captures(), 0);
  graph.run({&dummy_a}, [&] { ++n; });  // capture
  EXPECT_EQ(graph.captures(), 1);
  EXPECT_EQ(n, 2);
}

TEST(DeviceGraph, EagerGraphsHoldNoMemory) {
  DeviceGraph graph(GraphMode::captured, kCpu, "test body");  // eager on the CPU
  for (int i = 0; i < 3; ++i) graph.run({&dummy_a}, body_of(2));
  EXPECT_EQ(graph.warmup_peak_bytes(), 0);
  EXPECT_EQ(nnvmc::batching::held_bytes(-1), 0);
}

#ifdef NNVMC_TEST_CUDA_GRAPH_PLUGIN
// The plugin loads with all its symbols (libtorch_cuda's CUDAGraph, c10_cuda's streams). On a
// machine without a GPU its capture fails cleanly: the graph falls back to eager calls, the
// body's work is still done once per call, and the reason is kept. With a GPU it captures.
TEST(DeviceGraph, CudaPluginLoadsAndACaptureWithoutAGpuFallsBackToEagerCalls) {
  std::string why;
  ASSERT_TRUE(cuda_graphs_available(&why)) << why;
  DeviceGraph graph(GraphMode::captured, c10::Device(c10::DeviceType::CUDA, 0), "test body");
  ASSERT_EQ(graph.mode(), GraphMode::captured);
  int n = 0;
  for (int i = 0; i < 3; ++i) graph.run({&dummy_a}, [&] { ++n; });
  if (graph.failure().empty()) {  // a GPU: warm-up, then capture (the empty body) and two replays
    EXPECT_EQ(n, 2);
    EXPECT_EQ(graph.captures(), 1);
    EXPECT_EQ(graph.replays(), 2);
  } else {
    EXPECT_EQ(graph.mode(), GraphMode::eager);
    EXPECT_EQ(n, 3);
    EXPECT_EQ(graph.captures(), 0);
  }
}
#endif
