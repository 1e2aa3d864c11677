#pragma once
/// @file cuda_runtime.hpp
/// Tiny CUDA runtime queries (implemented in cuda_runtime.cu with NNVMC_WITH_CUDA, else a
/// stub that throws). Torch-free.
#include <cstdint>
#include <string>

namespace nnvmc::batching {

/// Free memory of CUDA device `index` (cudaMemGetInfo). @throws BudgetError without CUDA.
std::int64_t cuda_free_bytes(int index);

/// CUDA devices visible to the CUDA runtime (0 without a driver/GPU, or without NNVMC_WITH_CUDA).
int cuda_device_count();

/// Name of CUDA device `index` ("" without CUDA or without such a device).
std::string cuda_device_name(int index);

/// Whether this build has the CUDA backend (NNVMC_WITH_CUDA).
bool built_with_cuda();

}  // namespace nnvmc::batching
