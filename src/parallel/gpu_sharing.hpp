#pragma once
/// @file gpu_sharing.hpp
/// Which ranks of a run use the same physical GPU. Torch-free.
#include <string>

#include "parallel/communicator.hpp"

namespace nnvmc::parallel {

/// This rank's GPU as the machine knows it: host name and PCI bus id of CUDA device `device`
/// (the index this process gives it), or host name and index where the bus id is not available.
/// Ranks bound to one GPU each (CUDA_VISIBLE_DEVICES per rank, Slurm's GPU binding) all call
/// their GPU 0; the bus ids tell them apart.
std::string gpu_identity(int device);

/// This rank's CUDA device index when a run names a GPU without an index ("cuda", or the
/// staged cuBLAS backend's GPU): one GPU per rank on a node, local rank mod `gpus` (the GPUs
/// this process sees; at least 1 assumed). One process: 0, the current device.
int rank_gpu(const Communicator& comm, int gpus);

/// How many ranks of `comm` (this one included) use the same physical GPU as this rank's CUDA
/// device `device` (gpu_identity). Collective: every rank calls it.
int ranks_sharing_gpu(Communicator& comm, int device);

}  // namespace nnvmc::parallel
