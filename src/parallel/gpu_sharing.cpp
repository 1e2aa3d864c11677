/// Ranks sharing a GPU (gpu_sharing.hpp).
#include "parallel/gpu_sharing.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <functional>

#include "batching/cuda_runtime.hpp"

namespace nnvmc::parallel {

std::string gpu_identity(int device) {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  const std::string bus = batching::cuda_pci_bus_id(device);
  return std::string(name) + "/" + (bus.empty() ? "device " + std::to_string(device) : bus);
}

int rank_gpu(const Communicator& comm, int gpus) {
  return comm.size() > 1 ? comm.local_rank() % std::max(1, gpus) : 0;
}

int ranks_sharing_gpu(Communicator& comm, int device) {
  const auto mine = static_cast<std::int64_t>(std::hash<std::string>{}(gpu_identity(device)));
  const auto keys = comm.allgather(mine);
  return static_cast<int>(std::count(keys.begin(), keys.end(), mine));
}

}  // namespace nnvmc::parallel
