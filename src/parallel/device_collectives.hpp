#pragma once
/// @file device_collectives.hpp
/// Collectives on device (GPU) memory between the ranks of a Communicator, through NCCL.
/// One GPU per rank (local rank → device); the NCCL communicator is bootstrapped over the
/// host Communicator (rank 0 makes the NCCL unique id, MPI broadcasts it). Torch-free and
/// NCCL-free header: the NCCL implementation (nccl_collectives.cpp) is built when the build
/// has CUDA, MPI and nccl.h (NNVMC_WITH_NCCL), and loads libnccl.so.2 at run time (the copy
/// libtorch_cuda already loaded), so CPU-only machines never need it.
///
/// Every call is collective: all ranks, same order, same sizes. Calls are stream-ordered on
/// the device's default stream (the one torch uses unless told otherwise) and return when
/// the result is in place.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "parallel/communicator.hpp"

namespace nnvmc::parallel {

/// Element types the device collectives reduce.
enum class DeviceDtype { float32, float64 };

class DeviceCollectives {
 public:
  virtual ~DeviceCollectives() = default;
  /// In place: data[i] ← Σ_ranks data[i]; `n` elements of `dtype` in device memory.
  virtual void allreduce_sum(void* data, std::size_t n, DeviceDtype dtype) = 0;
  /// Copies `bytes` bytes at device address `data` from `root` to every rank.
  virtual void broadcast(void* data, std::size_t bytes, int root) = 0;
  /// Concatenation in rank order of every rank's `send` (bytes[r] bytes from rank r) into
  /// `recv` (Σ bytes), on every rank; counts may differ between ranks.
  virtual void allgatherv(const void* send, void* recv, const std::vector<std::int64_t>& bytes) = 0;
  /// "NCCL 2.28.9 on cuda:0".
  virtual std::string describe() const = 0;
};

/// Whether this build has the NCCL device collectives (NNVMC_WITH_NCCL).
bool device_collectives_built();

/// The device collectives of `comm` on CUDA device `device`, created on first use (a
/// collective call: all ranks make theirs at the same point) and kept for the process.
/// @throws Error when the build has no NCCL, or NCCL cannot serve every rank (libnccl missing,
///         no such device, two ranks on one GPU); all ranks throw together.
DeviceCollectives& device_collectives(Communicator& comm, int device);

/// Like device_collectives(), but returns nullptr on every rank when any rank cannot use NCCL
/// (the reason is logged once), so callers fall back to host buffers. Collective on first use.
DeviceCollectives* device_collectives_if_usable(Communicator& comm, int device);

}  // namespace nnvmc::parallel
