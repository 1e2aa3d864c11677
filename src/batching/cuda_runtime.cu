// CUDA runtime queries of a build with NNVMC_WITH_CUDA (compiled by nvcc).
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "batching/cuda_runtime.hpp"
#include "core/errors.hpp"

namespace nnvmc::batching {

std::int64_t cuda_free_bytes(int index) {
  int previous = 0;
  cudaGetDevice(&previous);
  if (cudaSetDevice(index) != cudaSuccess)
    throw BudgetError("memory budget 'auto': no CUDA device " + std::to_string(index));
  std::size_t free_b = 0, total = 0;
  const cudaError_t e = cudaMemGetInfo(&free_b, &total);
  cudaSetDevice(previous);
  if (e != cudaSuccess)
    throw BudgetError(std::string("memory budget 'auto': cudaMemGetInfo: ") + cudaGetErrorString(e));
  return static_cast<std::int64_t>(free_b);
}

int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" error
    return 0;
  }
  return n;
}

std::string cuda_device_name(int index) {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, index) != cudaSuccess) {
    cudaGetLastError();
    return "";
  }
  return prop.name;
}

bool built_with_cuda() { return true; }

}  // namespace nnvmc::batching
