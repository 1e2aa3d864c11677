/// main() of the MPI test programs: MPI is initialised before GoogleTest runs (the programs are
/// started by `mpirun -np K`, see tests/parallel/CMakeLists.txt), and only rank 0 prints.
#include <gtest/gtest.h>

#include "core/log.hpp"
#include "parallel/communicator.hpp"

int main(int argc, char** argv) {
  nnvmc::parallel::init_world(&argc, &argv, /*force=*/true);
  ::testing::InitGoogleTest(&argc, argv);
  nnvmc::setup_logging("error");
  if (!nnvmc::parallel::world().is_root()) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  const int rc = RUN_ALL_TESTS();
  // A test that failed on any rank fails the job.
  return nnvmc::parallel::world().any(rc != 0) ? 1 : 0;
}
