/// The memory a process reports as its own: its peak resident memory is that of its own address
/// space, not the parent's it was started from.
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/wait.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "core/host_memory.hpp"
#include "core/process.hpp"

using namespace nnvmc;

// A comparison's cells are started by a process that may have grown large (a CCSD(T) reference):
// the kernel's ru_maxrss of a child holds that peak from before its exec, and every cell reported
// the parent's 344 MiB (a user audit). VmHWM, which peak_resident_bytes reads, is the child's own.
TEST(HostMemory, PeakResidentBytesIsThisProcesssOwnNotItsParents) {
  constexpr std::size_t kBig = std::size_t(256) << 20;
  std::vector<char> big(kBig);
  std::memset(big.data(), 1, big.size());  // (touched: resident)
  EXPECT_GE(peak_resident_bytes(), std::int64_t(kBig));
  const std::string log = ::testing::TempDir() + "/nnvmc_child_status.txt";
  std::filesystem::remove(log);
  const pid_t pid = spawn_process({"/bin/sh", "-c", "exec grep VmHWM /proc/self/status"}, log);
  int wstatus = 0;
  rusage usage{};
  ASSERT_EQ(wait4(pid, &wstatus, 0, &usage), pid);
  EXPECT_GE(std::int64_t(usage.ru_maxrss) * 1024, std::int64_t(kBig));  // the kernel's figure: ours
  std::ifstream in(log);
  std::string key;
  std::int64_t kib = -1;
  in >> key >> kib;
  ASSERT_EQ(key, "VmHWM:");
  EXPECT_GT(kib, 0);
  EXPECT_LT(kib * 1024, std::int64_t(kBig) / 4);  // the child's own: a few MiB
  EXPECT_GT(big[kBig / 2], 0);
}
