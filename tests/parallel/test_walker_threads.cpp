#include <gtest/gtest.h>

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include "core/errors.hpp"
#include "parallel/walker_threads.hpp"

using namespace nnvmc;

namespace {
/// Sets libtorch's intra-op threads for one test and restores them after.
class IntraOpThreads {
 public:
  explicit IntraOpThreads(int n) : previous_(at::get_num_threads()) { at::set_num_threads(n); }
  ~IntraOpThreads() { at::set_num_threads(previous_); }

 private:
  int previous_;
};
}  // namespace

TEST(WalkerThreads, OnePartPerThreadOnlyWhenEachPartHasEnoughWalkersOnTheCpu) {
  IntraOpThreads threads(2);
  const auto min = parallel::kMinWalkersPerThread;
  EXPECT_EQ(parallel::walker_parts(512, true), 2);
  EXPECT_EQ(parallel::walker_parts(2 * min, true), 2);
  EXPECT_EQ(parallel::walker_parts(2 * min - 1, true), 1);
  EXPECT_EQ(parallel::walker_parts(512, /*on_cpu=*/false), 1);
  EXPECT_EQ(parallel::walker_parts(512, true, /*allows=*/false), 1);
  parallel::set_walker_threads(false);
  EXPECT_EQ(parallel::walker_parts(512, true), 1);
  parallel::set_walker_threads(true);
  at::set_num_threads(1);
  EXPECT_EQ(parallel::walker_parts(512, true), 1);
}

TEST(WalkerThreads, PartsAreContiguousAndCoverEveryWalkerOnce) {
  IntraOpThreads threads(2);
  for (std::int64_t parts : {1, 2, 3, 7}) {
    std::mutex m;
    std::vector<std::pair<std::int64_t, std::int64_t>> seen;
    parallel::for_each_walker_part(50, parts, [&](std::int64_t lo, std::int64_t hi) {
      std::lock_guard<std::mutex> lock(m);
      seen.emplace_back(lo, hi);
    });
    ASSERT_EQ(static_cast<std::int64_t>(seen.size()), parts);
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(seen.front().first, 0);
    EXPECT_EQ(seen.back().second, 50);
    for (std::size_t i = 1; i < seen.size(); ++i) EXPECT_EQ(seen[i].first, seen[i - 1].second);
    for (const auto& [lo, hi] : seen) EXPECT_GE(hi - lo, 50 / parts);
  }
}

TEST(WalkerThreads, PartsRunOnSeveralThreadsAndTheirOpsRunSingleThreaded) {
  IntraOpThreads threads(2);
  std::mutex m;
  std::set<int> ids;
  std::atomic<bool> nested_parallel{false};
  parallel::for_each_walker_part(64, 2, [&](std::int64_t, std::int64_t) {
    if (!at::in_parallel_region()) nested_parallel = true;  // ops inside would start threads
    std::lock_guard<std::mutex> lock(m);
    ids.insert(at::get_thread_num());
  });
  EXPECT_EQ(ids.size(), 2u);
  EXPECT_FALSE(nested_parallel.load());
}

TEST(WalkerThreads, PartsSeeTheCallersGradMode) {
  IntraOpThreads threads(2);
  for (bool grad : {true, false}) {
    torch::AutoGradMode mode(grad);
    std::atomic<int> agree{0};
    parallel::for_each_walker_part(64, 2, [&](std::int64_t, std::int64_t) {
      if (torch::GradMode::is_enabled() == grad) ++agree;
    });
    EXPECT_EQ(agree.load(), 2) << "grad mode " << grad;
  }
}

TEST(WalkerThreads, AnExceptionInOnePartReachesTheCallerWithItsType) {
  IntraOpThreads threads(2);
  EXPECT_THROW(parallel::for_each_walker_part(64, 2,
                                              [&](std::int64_t lo, std::int64_t) {
                                                if (lo > 0) throw InputError("part failed");
                                              }),
               InputError);
}

TEST(WalkerThreads, PartsTogetherStayWithinTheMemoryTheChunkWasFittedTo) {
  EXPECT_EQ(parallel::split_chunk(2, 0).parts, 2);  // no limit: whole parts
  EXPECT_EQ(parallel::split_chunk(2, 0).chunk, 0);
  EXPECT_EQ(parallel::split_chunk(2, 10).chunk, 5);
  EXPECT_EQ(parallel::split_chunk(16, 3).parts, 3);  // never more parts than walkers in a chunk
  EXPECT_EQ(parallel::split_chunk(16, 3).chunk, 1);
  EXPECT_EQ(parallel::split_chunk(2, 10, 100, 10).parts, 1);  // a second part's fixed bytes do not fit
  for (std::int64_t parts : {1, 2, 3, 8, 16})
    for (std::int64_t chunk : {1, 2, 5, 40, 1000})
      for (std::int64_t fixed : {0, 7, 100, 5000}) {
        const std::int64_t per = 10;
        const auto s = parallel::split_chunk(parts, chunk, fixed, per);
        EXPECT_GE(s.parts, 1);
        EXPECT_LE(s.parts, parts);
        EXPECT_GE(s.chunk, 1);
        EXPECT_LE(s.parts * (fixed + s.chunk * per), fixed + chunk * per)
            << parts << " parts, chunk " << chunk << ", fixed " << fixed;
      }
}
