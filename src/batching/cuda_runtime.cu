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

std::string cuda_pci_bus_id(int index) {
  char bus[64] = {};
  if (cudaDeviceGetPCIBusId(bus, sizeof bus - 1, index) != cudaSuccess) {
    cudaGetLastError();
    return "";
  }
  return bus;
}

bool built_with_cuda() { return true; }

namespace {
/// Runs `f` with `index` as the current device, then restores the previous one.
template <class F>
cudaError_t on_device(int index, F f) {
  int previous = 0;
  cudaGetDevice(&previous);
  cudaError_t e = cudaSetDevice(index);
  if (e == cudaSuccess) e = f();
  cudaSetDevice(previous);
  return e;
}
void check_event(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    cudaGetLastError();
    throw Error(std::string("CUDA event clock: ") + what + ": " + cudaGetErrorString(e));
  }
}
}  // namespace

CudaEventClock::CudaEventClock(int index) : device_(index) {
  cudaEvent_t a = nullptr, b = nullptr;
  check_event(on_device(index, [&] {
                const cudaError_t e = cudaEventCreate(&a);
                return e == cudaSuccess ? cudaEventCreate(&b) : e;
              }),
              "cudaEventCreate");
  start_ = a, stop_ = b;
}

CudaEventClock::~CudaEventClock() {
  if (start_) cudaEventDestroy(static_cast<cudaEvent_t>(start_));
  if (stop_) cudaEventDestroy(static_cast<cudaEvent_t>(stop_));
}

void CudaEventClock::start() {
  check_event(on_device(device_, [&] { return cudaEventRecord(static_cast<cudaEvent_t>(start_), cudaStreamLegacy); }),
              "cudaEventRecord");
}

double CudaEventClock::stop_seconds() {
  float ms = 0;
  check_event(on_device(device_,
                        [&] {
                          cudaError_t e = cudaEventRecord(static_cast<cudaEvent_t>(stop_), cudaStreamLegacy);
                          if (e == cudaSuccess) e = cudaEventSynchronize(static_cast<cudaEvent_t>(stop_));
                          if (e == cudaSuccess)
                            e = cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start_), static_cast<cudaEvent_t>(stop_));
                          return e;
                        }),
              "cudaEventRecord/Synchronize/ElapsedTime");
  return 1e-3 * double(ms);
}

}  // namespace nnvmc::batching
