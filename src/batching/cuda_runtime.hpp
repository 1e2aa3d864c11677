#pragma once
/// @file cuda_runtime.hpp
/// Tiny CUDA runtime queries (implemented in cuda_runtime.cu with NNVMC_WITH_CUDA, else a
/// stub that throws). Torch-free.
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/interval_clock.hpp"

namespace nnvmc::batching {

/// Free memory of CUDA device `index` (cudaMemGetInfo). @throws BudgetError without CUDA.
std::int64_t cuda_free_bytes(int index);

/// Free memory of CUDA device `index` through the CUDA runtime already loaded in the process
/// (nnvmc's own, or the one libtorch's CUDA library brought), found by name at run time; empty
/// when there is none, no such device, or the query fails. A build without NNVMC_WITH_CUDA
/// answers cuda_free_bytes() with it.
std::optional<std::int64_t> loaded_runtime_free_bytes(int index);

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

/// IntervalClock of the work queued on CUDA device `index`: device time of many short intervals
/// without waiting for the device at the end of each (a wait per interval idles the GPU between
/// launches: 15 k waits in the (T) loop of (H2O)6, ~15 per training iteration). begin()/end()
/// record pooled CUDA events on the legacy default stream (as CudaEventClock); harvest() turns
/// the intervals the device has passed into seconds and recycles their events.
class CudaIntervalClock final : public IntervalClock {
 public:
  /// @throws Error without CUDA (a build without NNVMC_WITH_CUDA, or no such device)
  explicit CudaIntervalClock(int index);
  ~CudaIntervalClock() override;
  CudaIntervalClock(const CudaIntervalClock&) = delete;
  CudaIntervalClock& operator=(const CudaIntervalClock&) = delete;
  std::int64_t begin() override;  ///< records a start event
  void end(std::int64_t id) override;  ///< records the end event (no wait)
  /// Without `wait`, stops at the first end event the device has not reached (cudaEventQuery).
  std::vector<std::pair<std::int64_t, double>> harvest(bool wait) override;

 private:
  struct Interval {
    std::int64_t id;
    void* start;
    void* stop;  ///< null while open
  };
  void* record_event();  ///< a spare event or a new one, recorded now
  std::deque<Interval> intervals_;  ///< begun and not harvested, by id
  std::vector<void*> spare_;        ///< recycled events
  std::int64_t next_id_ = 0;
  int device_ = 0;
};

}  // namespace nnvmc::batching
