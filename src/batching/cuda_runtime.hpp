#pragma once
/// @file cuda_runtime.hpp
/// Tiny CUDA runtime queries (implemented in cuda_runtime.cu with NNVMC_WITH_CUDA, else a
/// stub that throws). Torch-free.
#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

namespace nnvmc::batching {

/// Free memory of CUDA device `index` (cudaMemGetInfo). @throws BudgetError without CUDA.
std::int64_t cuda_free_bytes(int index);

/// CUDA devices visible to the CUDA runtime (0 without a driver/GPU, or without NNVMC_WITH_CUDA).
int cuda_device_count();

/// Name of CUDA device `index` ("" without CUDA or without such a device).
std::string cuda_device_name(int index);

/// PCI bus id of CUDA device `index` ("0000:3b:00.0"; "" without CUDA or without such a device):
/// the physical GPU whatever index this process gives it.
std::string cuda_pci_bus_id(int index);

/// Whether this build has the CUDA backend (NNVMC_WITH_CUDA).
bool built_with_cuda();

/// Device time between two points of the work queued on CUDA device `index`: two CUDA events
/// recorded on its legacy default stream, which every blocking stream (libtorch's default
/// stream included) joins, so the interval is what the device spent, not the host's clock.
class CudaEventClock {
 public:
  /// @throws Error without CUDA (a build without NNVMC_WITH_CUDA, or no such device)
  explicit CudaEventClock(int index);
  ~CudaEventClock();
  CudaEventClock(const CudaEventClock&) = delete;
  CudaEventClock& operator=(const CudaEventClock&) = delete;
  void start();           ///< records the start event
  double stop_seconds();  ///< records the stop event, waits for it; seconds since start()

 private:
  void* start_ = nullptr;
  void* stop_ = nullptr;
  int device_ = 0;
};

/// Device time of many short intervals of the work queued on CUDA device `index`, without
/// waiting for the device at the end of each (a wait per interval idles the GPU between
/// launches: 15 k waits in the (T) loop of (H2O)6). begin()/end() record pooled CUDA events on
/// the legacy default stream (as CudaEventClock); harvest() turns the intervals the device has
/// passed into seconds and recycles their events.
class CudaIntervalClock {
 public:
  /// @throws Error without CUDA (a build without NNVMC_WITH_CUDA, or no such device)
  explicit CudaIntervalClock(int index);
  ~CudaIntervalClock();
  CudaIntervalClock(const CudaIntervalClock&) = delete;
  CudaIntervalClock& operator=(const CudaIntervalClock&) = delete;
  /// Records the start of a new interval; returns its id (0, 1, 2, ... in order of begin()).
  std::int64_t begin();
  /// Records the end of interval `id` (no wait). Intervals may be open at the same time.
  void end(std::int64_t id);
  /// (id, seconds) of the ended intervals not yet harvested, in id order, up to the first one
  /// still open. `wait`: waits until the device reaches their end events; otherwise stops at
  /// the first the device has not reached yet (never blocks).
  std::vector<std::pair<std::int64_t, double>> harvest(bool wait);
  std::size_t unharvested() const { return intervals_.size(); }  ///< intervals begun, not harvested

 private:
  struct Interval {
    std::int64_t id;
    void* start;
    void* stop;  ///< null while open
  };
  int take_event(void** event);  ///< a spare event or a new one; a cudaError_t
  std::deque<Interval> intervals_;  ///< by id
  std::vector<void*> spare_;        ///< recycled events
  std::int64_t next_id_ = 0;
  int device_ = 0;
};

}  // namespace nnvmc::batching
