// CUDA runtime queries of a build with NNVMC_WITH_CUDA (compiled by nvcc).
#include <cuda_runtime.h>

#include <algorithm>
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
/// (No switch when `index` is current already: a switch back would also make a context on a
/// device this process may not use otherwise.)
template <class F>
cudaError_t on_device(int index, F f) {
  int previous = 0;
  if (cudaGetDevice(&previous) == cudaSuccess && previous == index) return f();
  cudaError_t e = cudaSetDevice(index);
  if (e == cudaSuccess) e = f();
  const cudaError_t back = cudaSetDevice(previous);
  if (back != cudaSuccess) cudaGetLastError();  // not for a later kernel launch to report
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

CudaIntervalClock::CudaIntervalClock(int index) : device_(index) {
  check_event(on_device(index, [] { return cudaSuccess; }), "cudaSetDevice");
}

CudaIntervalClock::~CudaIntervalClock() {
  on_device(device_, [&] {
    for (const auto& i : intervals_) {
      cudaEventDestroy(static_cast<cudaEvent_t>(i.start));
      if (i.stop) cudaEventDestroy(static_cast<cudaEvent_t>(i.stop));
    }
    for (void* e : spare_) cudaEventDestroy(static_cast<cudaEvent_t>(e));
    return cudaSuccess;
  });
}

void* CudaIntervalClock::record_event() {
  void* event = nullptr;
  check_event(on_device(device_,
                        [&] {
                          cudaError_t e = cudaSuccess;
                          if (!spare_.empty()) {
                            event = spare_.back();
                            spare_.pop_back();
                          } else {
                            cudaEvent_t created = nullptr;
                            e = cudaEventCreate(&created);
                            event = created;
                          }
                          if (e == cudaSuccess) e = cudaEventRecord(static_cast<cudaEvent_t>(event), cudaStreamLegacy);
                          if (e != cudaSuccess && event) spare_.push_back(event);  // back to the pool
                          return e;
                        }),
              "cudaEventCreate/Record");
  return event;
}

std::int64_t CudaIntervalClock::begin() {
  intervals_.push_back({next_id_, record_event(), nullptr});
  return next_id_++;
}

void CudaIntervalClock::end(std::int64_t id) {
  const auto at = std::find_if(intervals_.begin(), intervals_.end(), [&](const Interval& i) { return i.id == id; });
  if (at == intervals_.end() || at->stop) throw Error("CUDA interval clock: no open interval " + std::to_string(id));
  at->stop = record_event();
}

std::vector<std::pair<std::int64_t, double>> CudaIntervalClock::harvest(bool wait) {
  std::vector<std::pair<std::int64_t, double>> out;
  check_event(on_device(device_,
                        [&] {
                          for (auto it = intervals_.begin(); it != intervals_.end();) {
                            if (!it->stop) {  // still open (an outer stage): later ones may have ended
                              ++it;
                              continue;
                            }
                            const auto stop = static_cast<cudaEvent_t>(it->stop);
                            cudaError_t e = wait ? cudaEventSynchronize(stop) : cudaEventQuery(stop);
                            if (e == cudaErrorNotReady) {  // nor any recorded after it (one stream)
                              cudaGetLastError();
                              break;
                            }
                            float ms = 0;
                            if (e == cudaSuccess) e = cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(it->start), stop);
                            if (e != cudaSuccess) return e;
                            out.emplace_back(it->id, 1e-3 * double(ms));
                            spare_.push_back(it->start);
                            spare_.push_back(it->stop);
                            it = intervals_.erase(it);
                          }
                          return cudaSuccess;
                        }),
              "cudaEventSynchronize/Query/ElapsedTime");
  return out;
}

}  // namespace nnvmc::batching
