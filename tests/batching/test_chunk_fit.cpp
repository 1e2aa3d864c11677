/// @file test_chunk_fit.cpp
/// fit_chunk on the CPU measures its probes under a working-memory cap: an item far larger
/// than the budget is a BudgetError before the memory is taken, and a probe of several items
/// that does not fit falls back to one item's measurement.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "batching/chunk_fit.hpp"
#include "batching/peak_memory.hpp"
#include "common/units.hpp"
#include "core/errors.hpp"

using namespace nnvmc::batching;

namespace {
using nnvmc::test::kMiB;
/// Working memory of `per_item` MiB per item, allocated 1 MiB at a time (as a model's
/// layers would), so a cap stops it part-way.
void allocate(std::int64_t items, std::int64_t per_item) {
  std::vector<torch::Tensor> held;
  for (std::int64_t i = 0; i < items * per_item; ++i) held.push_back(torch::ones({kMiB / 8}, torch::kFloat64));
}
}  // namespace

TEST(ChunkFit, AnItemFarLargerThanTheBudgetIsABudgetErrorBeforeItsMemoryIsTaken) {
  ChunkFitOptions o;
  o.key = "run.memory_budget";
  o.what = "walker";
  const MemoryBudget budget(64 * kMiB);
  PeakMemoryScope scope;
  try {
    // One item of 64 GiB: without the cap this would run the machine out of memory.
    (void)fit_chunk([](std::int64_t k) { allocate(k, 64 * 1024); }, 512, budget, o);
    FAIL() << "expected BudgetError";
  } catch (const nnvmc::BudgetError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("run.memory_budget = 64.00 MiB is too small for one walker"), std::string::npos) << what;
  }
  EXPECT_LE(scope.peak_bytes(), static_cast<std::int64_t>(o.margin * 64 * kMiB));
}

TEST(ChunkFit, AProbeOfSeveralItemsThatDoesNotFitFallsBackToOneItem) {
  ChunkFitOptions o;
  o.margin = 1.0;
  o.probe_items = 8;
  // 10 MiB per item: one item fits 50 MiB, the probe of eight does not.
  const auto fit = fit_chunk([](std::int64_t k) { allocate(k, 10); }, 512, MemoryBudget(50 * kMiB), o);
  EXPECT_EQ(fit.bytes_per_item, 10 * kMiB);  // one item's peak, taken as the cost of each
  EXPECT_EQ(fit.chunk, 5);
  EXPECT_LE(fit.fixed_bytes + fit.chunk * fit.bytes_per_item, 50 * kMiB);
}

// HF pretraining's probe ran backward(), whose first call allocates the parameters' gradients:
// counted in one item's peak but not in the k-item probe's, the per-item cost came out as 1 B and
// 200000 walkers ran in one pass (2.6 GB over a 64 MiB budget).
TEST(ChunkFit, WhatTheFirstProbeAllocatesOnceIsNotTakenForWorkingMemory) {
  ChunkFitOptions o;
  o.margin = 1.0;
  o.probe_items = 8;
  torch::Tensor kept;  // 4 MiB the first call creates and every later call reuses
  const auto fit = fit_chunk(
      [&](std::int64_t k) {
        if (!kept.defined()) kept = torch::zeros({4 * kMiB / 8}, torch::kFloat64);
        allocate(k, 1);
      },
      512, MemoryBudget(64 * kMiB), o);
  EXPECT_EQ(fit.bytes_per_item, kMiB);
  EXPECT_LE(fit.chunk, 64);
  EXPECT_GE(fit.chunk, 60);
}
