#include <gtest/gtest.h>

#include "parallel/communicator.hpp"
#include "parallel/tensor_comm.hpp"

using namespace nnvmc::parallel;

TEST(Partition, BlocksCoverAllWalkersInRankOrderWithUnevenSplits) {
  for (int size : {1, 2, 3, 7})
    for (std::int64_t total : {7, 31, 64, 100}) {
      std::int64_t next = 0, smallest = total, largest = 0;
      for (int r = 0; r < size; ++r) {
        const auto p = partition(total, r, size);
        EXPECT_EQ(p.offset, next);
        next += p.count;
        smallest = std::min(smallest, p.count);
        largest = std::max(largest, p.count);
      }
      EXPECT_EQ(next, total);
      EXPECT_LE(largest - smallest, 1);
    }
}

TEST(SingleProcess, CollectivesAreIdentities) {
  auto c = make_single_process();
  EXPECT_EQ(c->rank(), 0);
  EXPECT_EQ(c->size(), 1);
  const auto t = torch::arange(6, torch::kFloat64).view({3, 2});
  std::int64_t offset = -1;
  EXPECT_TRUE(torch::equal(allgather_rows(*c, t, &offset), t));
  EXPECT_EQ(offset, 0);
  EXPECT_TRUE(torch::equal(allreduce_sum(*c, t), t));
  EXPECT_TRUE(torch::equal(gather_rows(*c, t), t));
  EXPECT_TRUE(torch::equal(local_rows(*c, t), t));
  EXPECT_EQ(c->allgather(5), std::vector<std::int64_t>{5});
  EXPECT_TRUE(c->any(true));
  EXPECT_FALSE(c->any(false));
}

TEST(World, IsOneProcessOutsideMpirun) {
  EXPECT_EQ(world().size(), 1);
  EXPECT_EQ(world().rank(), 0);
}
