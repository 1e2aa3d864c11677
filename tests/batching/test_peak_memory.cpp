#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>

#include "batching/backend.hpp"
#include "batching/cuda_runtime.hpp"
#include "batching/peak_memory.hpp"
#include "core/errors.hpp"
#include "core/host_parallel.hpp"

using nnvmc::batching::PeakMemoryScope;

namespace {
/// libtorch answers "is there CUDA?" once and keeps the answer, and this build loads
/// libtorch_cuda.so only on first use: on a GPU machine load it before any test asks torch
/// anything, or every CUDA branch of this binary would see no device.
class CudaRuntimeFirst : public testing::Environment {
 public:
  void SetUp() override {
    if (nnvmc::batching::cuda_device_count() > 0) nnvmc::batching::ensure_device_runtime("cuda");
  }
};
[[maybe_unused]] testing::Environment* const kCudaRuntimeFirst = testing::AddGlobalTestEnvironment(new CudaRuntimeFirst);
}  // namespace

TEST(PeakMemory, CountsTheHighWaterMarkOfTensorsMadeInsideTheScope) {
  const auto before = torch::ones({1 << 20}, torch::kFloat64);  // 8 MiB made earlier: not counted
  PeakMemoryScope scope;
  {
    const auto a = torch::empty({1 << 18}, torch::kFloat64);  // 2 MiB
    const auto b = torch::empty({1 << 17}, torch::kFloat64);  // 1 MiB, both alive
  }
  const auto c = torch::empty({1 << 16}, torch::kFloat64);  // 0.5 MiB after they are freed
  EXPECT_GE(scope.peak_bytes(), 3 << 20);
  EXPECT_LT(scope.peak_bytes(), (3 << 20) + (1 << 16));
}

TEST(PeakMemory, CountsAllocationsOfWorkerThreads) {
  // two threads whatever OMP_NUM_THREADS says (ctest sets 1), so that other threads allocate
  const int threads_before = at::get_num_threads();
  at::set_num_threads(2);
  PeakMemoryScope scope;
  std::atomic<int> workers{0};
  at::parallel_for(0, 4, 1, [&](int64_t lo, int64_t hi) {
    if (at::get_thread_num() > 0) ++workers;
    for (int64_t i = lo; i < hi; ++i) (void)torch::empty({1 << 15}, torch::kFloat64);
  });
  at::set_num_threads(threads_before);
  EXPECT_GT(workers.load(), 0) << "at::parallel_for ran on the calling thread only";
  EXPECT_GE(scope.peak_bytes(), 1 << 18);
}

TEST(PeakMemory, EnclosingScopeSeesThePeakOfANestedOne) {
  PeakMemoryScope outer;
  { const auto a = torch::empty({1 << 18}, torch::kFloat64); }  // 2 MiB, freed
  {
    PeakMemoryScope inner;
    const auto b = torch::empty({1 << 17}, torch::kFloat64);  // 1 MiB
    EXPECT_GE(inner.peak_bytes(), 1 << 20);
    EXPECT_LT(inner.peak_bytes(), 2 << 20);  // the outer region's 2 MiB are not the inner's
  }
  { PeakMemoryScope inner; const auto c = torch::empty({1 << 19}, torch::kFloat64); }  // 4 MiB
  EXPECT_GE(outer.peak_bytes(), 4 << 20);
}

// Whichever this machine has: with a CUDA device the scope reads the caching allocator's
// peak of that device; without one, asking for a CUDA scope is a clear InputError.
TEST(PeakMemory, CudaScopeReadsTheCachingAllocatorOrSaysThereIsNoDevice) {
  if (nnvmc::batching::cuda_device_count() > 0) {
    ASSERT_GT(torch::cuda::device_count(), 0) << "libtorch_cuda.so was loaded after torch cached 'no CUDA'";
    PeakMemoryScope outer(0);
    {
      PeakMemoryScope inner(0);
      const auto a = torch::empty({1 << 20}, torch::dtype(torch::kFloat64).device(torch::kCUDA, 0));  // 8 MiB
      EXPECT_GE(inner.peak_bytes(), 8 << 20);
    }
    const auto b = torch::empty({1 << 17}, torch::dtype(torch::kFloat64).device(torch::kCUDA, 0));  // 1 MiB
    EXPECT_GE(outer.peak_bytes(), 8 << 20);  // the nested scope's peak is seen by the outer one
    EXPECT_LT(PeakMemoryScope(0).peak_bytes(), 1 << 20);
  } else {
    try {
      PeakMemoryScope scope(0);
      FAIL() << "expected InputError without a CUDA device";
    } catch (const nnvmc::InputError& e) {
      EXPECT_NE(std::string(e.what()).find("cuda:0"), std::string::npos) << e.what();
    }
  }
}

TEST(WorkingMemoryCap, RefusesAnAllocationPastTheCapBeforeTakingMemory) {
  const auto before = torch::ones({1 << 20}, torch::kFloat64);  // 8 MiB made earlier: not counted
  PeakMemoryScope scope;
  {
    nnvmc::batching::WorkingMemoryCap cap(4 << 20);  // 4 MiB of working memory
    const auto a = torch::empty({1 << 18}, torch::kFloat64);  // 2 MiB: fits
    EXPECT_THROW((void)torch::empty({1 << 18}, torch::kFloat64).add_(1.0).mul(2.0), nnvmc::BudgetError);
    // A refused allocation is not counted, and what is freed makes room again.
    const auto b = torch::empty({1 << 17}, torch::kFloat64);  // 1 MiB: 3 MiB in use
    EXPECT_THROW((void)torch::empty({1 << 18}, torch::kFloat64), nnvmc::batching::WorkingMemoryExceeded);
  }
  EXPECT_LE(scope.peak_bytes(), 4 << 20);  // up to the cap, never past it
  // Without the cap the same allocation succeeds.
  EXPECT_NO_THROW((void)torch::empty({1 << 20}, torch::kFloat64));
}

TEST(WorkingMemoryCap, AnInnerCapCannotLoosenAnEnclosingOneAndWorkerThreadsAreCapped) {
  nnvmc::batching::WorkingMemoryCap outer(2 << 20);
  {
    nnvmc::batching::WorkingMemoryCap inner(64 << 20);
    EXPECT_THROW((void)torch::empty({1 << 19}, torch::kFloat64), nnvmc::batching::WorkingMemoryExceeded);  // 4 MiB
  }
  {
    nnvmc::batching::WorkingMemoryCap inner(1 << 20);  // a tighter inner cap holds while it lives
    EXPECT_THROW((void)torch::empty({1 << 18}, torch::kFloat64), nnvmc::batching::WorkingMemoryExceeded);  // 2 MiB
  }
  EXPECT_NO_THROW((void)torch::empty({1 << 17}, torch::kFloat64));  // 1 MiB under the outer cap again
  // at::parallel_for hands a worker's exception back to the caller.
  EXPECT_THROW(at::parallel_for(0, 4, 1,
                                [](int64_t lo, int64_t hi) {
                                  for (int64_t i = lo; i < hi; ++i) (void)torch::empty({1 << 19}, torch::kFloat64);
                                }),
               nnvmc::batching::WorkingMemoryExceeded);
}

// A build without nnvmc's CUDA part answers `auto` on a GPU through the CUDA runtime libtorch
// loaded (found by name): on a GPU it must agree with nnvmc's own query (free memory moves a
// little between the two); without one there is no answer, and no error is left behind.
TEST(CudaRuntime, FreeMemoryThroughTheLoadedRuntimeAgreesWithNnvmcsOwnQuery) {
  namespace b = nnvmc::batching;
  if (b::cuda_device_count() == 0) {
    EXPECT_FALSE(b::loaded_runtime_free_bytes(0).has_value());
    EXPECT_FALSE(b::loaded_runtime_free_bytes(7).has_value());
    return;
  }
  const auto via_loaded = b::loaded_runtime_free_bytes(0);
  ASSERT_TRUE(via_loaded.has_value());
  EXPECT_NEAR(double(*via_loaded), double(b::cuda_free_bytes(0)), double(512LL << 20));
  EXPECT_FALSE(b::loaded_runtime_free_bytes(b::cuda_device_count()).has_value());  // no such device
  EXPECT_GT(b::cuda_free_bytes(0), 0);  // and the runtime still answers afterwards
}
