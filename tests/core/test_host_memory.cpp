/// The memory a process reports as its own: its peak resident memory is that of its own address
/// space, not the parent's it was started from.
/// And how a child process is started (spawn_process).
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "core/errors.hpp"
#include "core/host_memory.hpp"
#include "core/process.hpp"

using namespace nnvmc;

// A comparison's cells are started by a process that may have grown large (a CCSD(T) reference):
// the kernel's ru_maxrss of a child holds that peak from before its exec, and every cell reported
// the parent's 344 MiB (a user audit). peak_resident_bytes, called in a child (this test binary
// started again, NNVMC_TEST_PEAK_CHILD set), gives the child's own.
TEST(HostMemory, PeakResidentBytesIsThisProcesssOwnNotItsParents) {
  if (std::getenv("NNVMC_TEST_PEAK_CHILD") != nullptr) {  // (the child: report and end)
    std::printf("peak %lld\n", static_cast<long long>(peak_resident_bytes()));
    return;
  }
  constexpr std::size_t kBig = std::size_t(256) << 20;
  std::vector<char> big(kBig);
  std::memset(big.data(), 1, big.size());  // (touched: resident)
  EXPECT_GE(peak_resident_bytes(), std::int64_t(kBig));
  const std::string log = ::testing::TempDir() + "/nnvmc_child_peak.txt";
  std::filesystem::remove(log);
  const pid_t pid = spawn_process({self_executable(), "--gtest_filter=HostMemory.PeakResidentBytesIsThisProcesssOwnNotItsParents"},
                                  log, {"NNVMC_TEST_PEAK_CHILD=1"});
  int wstatus = 0;
  rusage usage{};
  ASSERT_EQ(wait4(pid, &wstatus, 0, &usage), pid);
  ASSERT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0);
  EXPECT_GE(std::int64_t(usage.ru_maxrss) * 1024, std::int64_t(kBig));  // the kernel's figure: ours
  std::ifstream in(log);
  std::string word;
  long long child_peak = -1;
  while (in >> word)
    if (word == "peak") in >> child_peak;
  EXPECT_GT(child_peak, 0);
  EXPECT_LT(child_peak, std::int64_t(kBig) / 2);  // the child's own: its libraries and gtest
  EXPECT_GT(big[kBig / 2], 0);
}

// A log file that cannot be opened (its directory missing, as a compare cell's on a rank that does
// not share rank 0's filesystem) is named as such: posix_spawn reported the child's failed open
// as "cannot start 'nnvmc': No such file or directory" (a user audit).
TEST(Process, ALogFileThatCannotBeOpenedIsNamedNotTheExecutable) {
  const std::string log = ::testing::TempDir() + "/nnvmc_no_such_dir/log.txt";
  std::filesystem::remove_all(::testing::TempDir() + "/nnvmc_no_such_dir");
  try {
    spawn_process({"/bin/true"}, log);
    ADD_FAILURE() << "spawned with an unopenable log file";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open the log file '" + log + "'"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("cannot start"), std::string::npos) << e.what();
  }
}
