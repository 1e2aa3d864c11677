#include <gtest/gtest.h>

#include "batching/budget.hpp"
#include "batching/cuda_runtime.hpp"
#include "core/errors.hpp"

using nnvmc::batching::MemoryBudget;

TEST(MemoryBudget, ParsesByteCountsWithUnits) {
  EXPECT_EQ(MemoryBudget::parse("2GiB").bytes(), 2LL << 30);
  EXPECT_EQ(MemoryBudget::parse("500MB").bytes(), 500000000LL);
  EXPECT_EQ(MemoryBudget::parse("4096").bytes(), 4096);
}

TEST(MemoryBudget, AutoIsAFractionOfAvailableHostMemory) {
  const auto free_b = MemoryBudget::free_bytes("cpu");
  const auto b = MemoryBudget::parse("auto").bytes();
  EXPECT_GT(b, 0);
  EXPECT_LE(b, free_b);
}

TEST(MemoryBudget, MaxBatchFloorsAndReservesFixedBytes) {
  const MemoryBudget b(1000);
  EXPECT_EQ(b.max_batch(100), 10);
  EXPECT_EQ(b.max_batch(300, 100), 3);
  EXPECT_EQ(b.max_batch(1000), 1);
  EXPECT_EQ(b.chunks(25, 100), 3);
  EXPECT_EQ(MemoryBudget::unlimited().max_batch(1 << 20) > (1LL << 40), true);
}

TEST(MemoryBudget, OneItemThatDoesNotFitIsABudgetError) {
  const MemoryBudget b(1000);
  EXPECT_THROW(b.max_batch(1001), nnvmc::BudgetError);
  EXPECT_THROW(b.max_batch(600, 500), nnvmc::BudgetError);
  EXPECT_THROW(MemoryBudget(0), nnvmc::BudgetError);
}

TEST(MemoryBudget, BadTextIsAConfigError) {
  EXPECT_THROW(MemoryBudget::parse("lots"), nnvmc::ConfigError);
}

TEST(MemoryBudget, AutoOnCudaWithoutCudaBuildIsAClearError) {
  if (nnvmc::batching::built_with_cuda()) GTEST_SUCCEED() << "CUDA build";
  else EXPECT_THROW(MemoryBudget::parse("auto", "cuda"), nnvmc::BudgetError);
}
