/// @file test_held_memory.cpp
/// The held-memory ledger (memory a device keeps outside every stage, e.g. CUDA graph pools)
/// and fit_chunk leaving it out of the budget.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>

#include "batching/chunk_fit.hpp"
#include "batching/held_memory.hpp"
#include "common/units.hpp"
#include "core/errors.hpp"

using namespace nnvmc::batching;

namespace {
const int kCpu = -1;
using nnvmc::test::kMiB;
/// A probe whose working memory is k MiB (plus torch's small overheads).
void probe(std::int64_t k) { (void)torch::empty({k * kMiB / 8}, torch::kFloat64).fill_(1.0); }
/// Memory held on the CPU for the scope's lifetime (released whatever happens).
struct HeldOnCpu {
  explicit HeldOnCpu(std::int64_t bytes) { hold_memory(kCpu, this, bytes); }
  ~HeldOnCpu() { release_memory(kCpu, this); }
};
}  // namespace

TEST(HeldMemory, HoldersOfADeviceAddUpAndAReleasedHolderIsForgotten) {
  int a = 0, b = 0;
  const std::int64_t before = held_bytes(kCpu);
  hold_memory(kCpu, &a, 3 * kMiB);
  hold_memory(kCpu, &b, 2 * kMiB);
  hold_memory(0, &b, 7 * kMiB);  // another device
  EXPECT_EQ(held_bytes(kCpu) - before, 5 * kMiB);
  hold_memory(kCpu, &a, kMiB);  // replaces a's entry
  EXPECT_EQ(held_bytes(kCpu) - before, 3 * kMiB);
  release_memory(kCpu, &a);
  release_memory(kCpu, &b);
  EXPECT_EQ(held_bytes(kCpu), before);
  EXPECT_EQ(held_bytes(0), 7 * kMiB);
  release_memory(0, &b);
  EXPECT_EQ(held_bytes(0), 0);
}

TEST(ChunkFit, MemoryHeldOnTheDeviceIsLeftOutOfTheBudget) {
  ChunkFitOptions o;
  o.margin = 1.0;
  const MemoryBudget budget(40 * kMiB);
  const auto free_fit = fit_chunk(probe, 1000, budget, o);
  EXPECT_EQ(free_fit.held_bytes, 0);
  EXPECT_NEAR(static_cast<double>(free_fit.chunk), 40.0, 1.0);
  const HeldOnCpu pool(16 * kMiB);
  const auto fit = fit_chunk(probe, 1000, budget, o);
  EXPECT_EQ(fit.held_bytes, 16 * kMiB);
  EXPECT_NEAR(static_cast<double>(fit.chunk), 24.0, 1.0);
  EXPECT_LE(fit.held_bytes + fit.fixed_bytes + fit.chunk * fit.bytes_per_item, budget.bytes());
  // A stage that joins the pool itself (a graphed local energy) does not subtract it.
  o.subtract_held = false;
  const auto joining = fit_chunk(probe, 1000, budget, o);
  EXPECT_EQ(joining.held_bytes, 0);
  EXPECT_EQ(joining.chunk, free_fit.chunk);
}

TEST(ChunkFit, HeldMemoryThatLeavesNoRoomForOneItemIsABudgetErrorSayingSo) {
  const HeldOnCpu pool(39 * kMiB + kMiB / 2);  // half of one item left
  ChunkFitOptions o;
  o.margin = 1.0;
  o.key = "run.memory_budget";
  try {
    (void)fit_chunk(probe, 10, MemoryBudget(40 * kMiB), o);
    FAIL() << "expected BudgetError";
  } catch (const nnvmc::BudgetError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("run.memory_budget"), std::string::npos) << what;
    EXPECT_NE(what.find("held by captured CUDA graphs"), std::string::npos) << what;
  }
}
