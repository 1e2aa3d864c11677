#pragma once
/// @file cuda_runtime.hpp
/// Tiny CUDA runtime queries (implemented in cuda_runtime.cu with NNVMC_WITH_CUDA, else a
/// stub that throws). Torch-free.
#include <cstdint>

namespace nnvmc::batching {

/// Free memory of CUDA device `index` (cudaMemGetInfo). @throws BudgetError without CUDA.
std::int64_t cuda_free_bytes(int index);

/// Whether this build has the CUDA backend (NNVMC_WITH_CUDA).
bool built_with_cuda();

}  // namespace nnvmc::batching
