#include <gtest/gtest.h>

#include <cstdlib>

#include "batching/cuda_runtime.hpp"
#include "core/errors.hpp"
#include "parallel/communicator.hpp"
#include "parallel/device_collectives.hpp"
#include "parallel/gpu_sharing.hpp"
#include "parallel/launcher.hpp"
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

// A GPU is known by its host and PCI bus id (the index this process gives it is not enough:
// ranks bound to one GPU each all call theirs 0); without a bus id, by host and index.
TEST(SingleProcess, AGpusIdentityIsItsHostAndBusIdAndOneProcessSharesItWithNobody) {
  const std::string bus = nnvmc::batching::cuda_pci_bus_id(0);
  const std::string id = gpu_identity(0);
  EXPECT_NE(id.find('/'), std::string::npos) << id;
  if (bus.empty()) {
    EXPECT_NE(id.find("device 0"), std::string::npos) << id;
    EXPECT_NE(id, gpu_identity(1));
  } else {
    EXPECT_NE(id.find(bus), std::string::npos) << id;
  }
  EXPECT_EQ(ranks_sharing_gpu(world(), 0), 1);
}

TEST(SingleProcess, OneProcessUsesTheCurrentGpuWhateverTheNodeHas) {
  for (int gpus : {0, 1, 4}) EXPECT_EQ(rank_gpu(world(), gpus), 0) << gpus;
}

TEST(World, IsOneProcessOutsideMpirun) {
  EXPECT_EQ(world().size(), 1);
  EXPECT_EQ(world().rank(), 0);
}

// The launcher's variables say how many processes it started: Open MPI, MPICH/Hydra or Slurm;
// a malformed or missing size is one. (A build without MPI refuses to run as one of several.)
TEST(Launcher, WorldSizeFromTheLaunchersVariables) {
  const char* vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "SLURM_STEP_NUM_TASKS"};
  for (const char* v : vars) ASSERT_EQ(std::getenv(v), nullptr) << v << " set: run me outside mpirun";
  EXPECT_FALSE(launched_by_launcher());
  EXPECT_EQ(launcher_world_size(), 1);
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"}) {
    setenv(v, "3", 1);
    EXPECT_TRUE(launched_by_launcher()) << v;
    EXPECT_EQ(launcher_world_size(), 3) << v;
    setenv(v, "3x", 1);
    EXPECT_EQ(launcher_world_size(), 1) << v;
    unsetenv(v);
  }
  setenv("PMIX_RANK", "0", 1);  // PMIx alone: launched, size not said
  EXPECT_TRUE(launched_by_launcher());
  EXPECT_EQ(launcher_world_size(), 1);
  unsetenv("PMIX_RANK");
}

// A hint names the command as this run was launched (a resume hint without mpirun, a user audit).
TEST(Launcher, APrefixRunsAHintedCommandAsThisRunRan) {
  ASSERT_EQ(std::getenv("SLURM_STEP_NUM_TASKS"), nullptr);
  EXPECT_EQ(launch_prefix(1), "");
  EXPECT_EQ(launch_prefix(2), "mpirun -np 2 ");
  setenv("SLURM_STEP_NUM_TASKS", "4", 1);
  EXPECT_EQ(launch_prefix(4), "srun -n 4 ");
  setenv("OMPI_COMM_WORLD_SIZE", "4", 1);  // Open MPI's mpirun inside a Slurm allocation
  EXPECT_EQ(launch_prefix(4), "mpirun -np 4 ");
  unsetenv("OMPI_COMM_WORLD_SIZE");
  unsetenv("SLURM_STEP_NUM_TASKS");
}

TEST(DeviceCollectives, NeedAGpuAndOtherwiseFailWithATypedErrorNotACrash) {
  // NCCL needs a GPU per rank. Without one (CI), asking for the device collectives must raise
  // nnvmc's error (no NCCL in the build, no libnccl, or no CUDA device), never abort; with one,
  // a one-rank NCCL communicator comes up (on the H200 script, bench_device_collectives checks
  // the collectives' results too).
  auto c = make_single_process();
  if (device_collectives_built() && nnvmc::batching::cuda_device_count() > 0) {
    EXPECT_NE(device_collectives(*c, 0).describe().find("NCCL"), std::string::npos);
    return;
  }
  try {
    device_collectives(*c, 0);
    FAIL() << "device collectives were created without a GPU";
  } catch (const nnvmc::Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(device_collectives_built() ? "NCCL" : "without NCCL"), std::string::npos) << what;
  }
}
