/// @file device_collectives_stub.cpp
/// Builds without NCCL: device tensors are reduced through host buffers (tensor_comm.cpp).
#include "core/errors.hpp"
#include "parallel/device_collectives.hpp"

namespace nnvmc::parallel {

bool device_collectives_built() { return false; }

DeviceCollectives& device_collectives(Communicator& /*comm*/, int /*device*/) {
  throw Error("device collectives: this nnvmc was built without NCCL (needs CUDA, MPI and nccl.h)");
}

DeviceCollectives* device_collectives_if_usable(Communicator& /*comm*/, int /*device*/) { return nullptr; }

}  // namespace nnvmc::parallel
