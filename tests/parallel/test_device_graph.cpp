/// @file test_device_graph.cpp
/// DeviceGraph's call sequence (warm-up, capture, replay, a new key captures again) in the
/// emulated mode the CPU runs, the eager fallback, and the CUDA plugin's linkage and error path.
#include <gtest/gtest.h>

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
