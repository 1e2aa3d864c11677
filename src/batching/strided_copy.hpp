#pragma once
/// @file strided_copy.hpp
/// The device kernel behind DeviceOps::strided_copy on CUDA (strided_copy.cu, compiled by nvcc
/// only with NNVMC_WITH_CUDA). Torch-free; the stream is a cudaStream_t passed as void*.
#include "batching/device_ops.hpp"

namespace nnvmc::batching {

/// Enqueues `call` on CUDA stream `stream` (a cudaStream_t) of the current device.
/// @throws Error when the launch fails.
void launch_strided_copy(const StridedCopy& call, void* stream);

}  // namespace nnvmc::batching
