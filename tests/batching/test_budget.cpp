#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "batching/budget.hpp"
#include "batching/cuda_runtime.hpp"
#include "core/errors.hpp"

using nnvmc::batching::MemoryBudget;

TEST(MemoryBudget, ParsesByteCountsWithUnits) {
  EXPECT_EQ(MemoryBudget::parse("2GiB").bytes(), 2LL << 30);
  EXPECT_EQ(MemoryBudget::parse("500MB").bytes(), 500000000LL);
  EXPECT_EQ(MemoryBudget::parse("4096").bytes(), 4096);
}

// Advice to give a size is rounded up, so that giving it is enough (found by a user audit: the
// CCSD advised "22.99 MiB or more" for 22.996 MiB and then warned about that budget again).
TEST(MemoryBudget, AdvisedSizesAreRoundedUpAndParseToAtLeastTheSize) {
  for (const double bytes : {24108175.0, 288799.0, 1023.4, 5.0 * (1 << 30), 3.5 * (1 << 20)}) {
    std::string text = nnvmc::batching::format_bytes_up(bytes);
    text.erase(text.find(' '), 1);  // "22.99 MiB" -> "22.99MiB", as --memory takes it
    EXPECT_GE(double(MemoryBudget::parse(text, "cpu", "--memory").bytes()), bytes) << text;
  }
  EXPECT_EQ(nnvmc::batching::format_bytes_up(3.5 * (1 << 20)), "3.50 MiB");  // exact values stay
  EXPECT_EQ(nnvmc::batching::format_bytes_up(24108175.0), "23.00 MiB");  // 22.9912 MiB
  EXPECT_EQ(nnvmc::batching::format_bytes(24108175.0), "22.99 MiB");
}

TEST(MemoryBudget, AutoIsAFractionOfAvailableHostMemory) {
  const auto free_b = MemoryBudget::free_bytes("cpu");
  const auto b = MemoryBudget::parse("auto").bytes();
  EXPECT_GT(b, 0);
  EXPECT_LE(b, free_b);
}

// Processes sharing one GPU (CCSD ranks, more VMC ranks than GPUs, a comparison's cells at once)
// each measure its free memory before the others allocate: each takes 1/K of what 'auto' would be
// for one, and only on a CUDA device (host memory is shared out by set_cpu_auto_bytes).
TEST(MemoryBudget, AutoOnAGpuSharedByKProcessesIsAKthOfItsShare) {
  const std::int64_t free = 1000000;
  EXPECT_EQ(MemoryBudget::auto_bytes("cuda:0", free), 600000);
  MemoryBudget::set_cuda_auto_sharers(4);
  EXPECT_EQ(MemoryBudget::auto_bytes("cuda", free), 150000);
  EXPECT_EQ(MemoryBudget::auto_bytes("cuda:1", free), 150000);
  EXPECT_EQ(MemoryBudget::auto_bytes("cpu", free), 600000);
  MemoryBudget::set_cuda_auto_sharers(0);  // at least one
  EXPECT_EQ(MemoryBudget::auto_bytes("cuda", free), 600000);
}

// A share is set when the process starts (a rank under mpirun, a comparison's cell), before its
// model exists: what the process holds after that (the model's parameters) comes off its room,
// as it comes off the free memory that 'auto' reads without a share.
TEST(MemoryBudget, AShareLosesWhatTheProcessAllocatedAfterItWasSet) {
  MemoryBudget::set_cpu_auto_bytes(std::int64_t{4} << 30);
  const std::int64_t before = MemoryBudget::room_bytes("cpu");
  std::vector<char> model(std::size_t{256} << 20, 1);  // touched: resident
  const std::int64_t after = MemoryBudget::room_bytes("cpu");
  MemoryBudget::set_cpu_auto_bytes(0);
  EXPECT_NE(model.back(), 0);
  EXPECT_NEAR(static_cast<double>(before - after), double(std::int64_t{256} << 20), double(std::int64_t{16} << 20));
}

// Memory a training will allocate besides the working memory (its optimizer state) is left out
// of the room 'auto' takes its fraction of: a process's share when one is set (ranks, a
// comparison's cells), else the free memory.
TEST(MemoryBudget, AutoLeavesOutTheReservedBytes) {
  MemoryBudget::set_cpu_auto_bytes(std::int64_t{1} << 30);  // the share of a process that may use 1 GiB / 0.6
  // (within 1 MiB: what the process allocates meanwhile comes off its share, see below)
  EXPECT_NEAR(static_cast<double>(MemoryBudget::room_bytes("cpu")), (std::int64_t{1} << 30) / 0.6, double(1 << 20));
  EXPECT_NEAR(static_cast<double>(MemoryBudget::parse("auto", "cpu", "run.memory_budget", std::int64_t{256} << 20).bytes()),
              static_cast<double>(std::int64_t{1} << 30) - 0.6 * static_cast<double>(std::int64_t{256} << 20), double(1 << 20));
  EXPECT_EQ(MemoryBudget::parse("auto", "cpu", "run.memory_budget", std::int64_t{2} << 30).bytes(), 1);
  EXPECT_EQ(MemoryBudget::parse("2GiB", "cpu", "run.memory_budget", std::int64_t{1} << 30).bytes(),
            std::int64_t{2} << 30);  // an explicit budget is the user's: nothing is taken from it
  MemoryBudget::set_cpu_auto_bytes(0);
  const std::int64_t reserved = MemoryBudget::free_bytes("cpu") / 4;
  const std::int64_t without = MemoryBudget::parse("auto", "cpu").bytes();
  const std::int64_t with = MemoryBudget::parse("auto", "cpu", "memory", reserved).bytes();
  // (the free memory is read twice and may move a little in between)
  EXPECT_NEAR(static_cast<double>(without - with), MemoryBudget::kAutoFraction * static_cast<double>(reserved),
              64.0 * (1 << 20));
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

namespace {
/// Lowers this process's soft address-space limit for its lifetime, then restores it.
class AddressSpaceLimit {
 public:
  explicit AddressSpaceLimit(rlim_t bytes) {
    getrlimit(RLIMIT_AS, &saved_);
    rlimit lowered = saved_;
    lowered.rlim_cur = bytes;
    ok_ = setrlimit(RLIMIT_AS, &lowered) == 0;
  }
  ~AddressSpaceLimit() { setrlimit(RLIMIT_AS, &saved_); }
  bool ok() const { return ok_; }

 private:
  rlimit saved_{};
  bool ok_ = false;
};

/// VmSize of this process in bytes.
std::int64_t virtual_bytes() {
  std::ifstream in("/proc/self/status");
  for (std::string key; in >> key;)
    if (key == "VmSize:") {
      std::int64_t kb = 0;
      in >> kb;
      return kb * 1024;
    }
  return 0;
}
}  // namespace

// Under `ulimit -v` (or a cgroup limit) MemAvailable still reports the whole machine; a budget
// taken from it would be killed or refused by the limit instead of fitting.
TEST(MemoryBudget, AutoAndExplicitBudgetsRespectTheAddressSpaceLimit) {
  constexpr std::int64_t kRoom = 512LL << 20;
  const std::int64_t limit = virtual_bytes() + kRoom;
  AddressSpaceLimit guard(static_cast<rlim_t>(limit));
  ASSERT_TRUE(guard.ok());
  const auto host = nnvmc::batching::host_memory();
  // The address-space limit is the tightest unless a cgroup's limit is tighter still (a
  // container smaller than this process's mapped size): then that one holds.
  const bool ulimit_tightest = host.limit == limit;
  EXPECT_LE(host.limit, limit);
  EXPECT_LE(host.available, kRoom);
  if (ulimit_tightest) {
    EXPECT_NE(host.limit_source.find("ulimit -v"), std::string::npos) << host.limit_source;
    EXPECT_GT(host.available, kRoom / 2);  // mapped since the limit was set: a little
    // the process's own limit: other processes of the node (MPI ranks) do not share it
    EXPECT_NE(host.available_source.find("ulimit -v"), std::string::npos) << host.available_source;
    EXPECT_TRUE(host.available_per_process);
    EXPECT_EQ(host.share(4), host.available);
  }
  EXPECT_LE(MemoryBudget::parse("auto").bytes(), static_cast<std::int64_t>(MemoryBudget::kAutoFraction * kRoom));
  try {
    (void)MemoryBudget::parse(std::to_string(limit + 1), "cpu", "run.memory_budget");
    FAIL() << "expected ConfigError";
  } catch (const nnvmc::ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'run.memory_budget'"), std::string::npos) << what;
    if (ulimit_tightest) {
      EXPECT_NE(what.find("address-space limit (ulimit -v)"), std::string::npos) << what;
    }
  }
}

TEST(MemoryBudget, WithoutLimitsTheHostMemoryIsTheMachinesOrATighterCgroup) {
  const auto host = nnvmc::batching::host_memory();
  EXPECT_GT(host.available, 0);
  EXPECT_LE(host.available, host.limit);
  EXPECT_FALSE(host.limit_source.empty());
  EXPECT_FALSE(host.available_source.empty());
}

// The machine's or a cgroup's memory is shared by the node's ranks; a ulimit -v is each process's own.
TEST(MemoryBudget, ARanksShareOfTheHostDividesOnlySharedMemory) {
  nnvmc::HostMemory shared;
  shared.available = 1200;
  EXPECT_EQ(shared.share(1), 1200);
  EXPECT_EQ(shared.share(3), 400);
  nnvmc::HostMemory own = shared;
  own.available_per_process = true;
  EXPECT_EQ(own.share(3), 1200);
  nnvmc::HostMemory unknown;
  unknown.available = -1;
  EXPECT_EQ(unknown.share(2), -1);
}
