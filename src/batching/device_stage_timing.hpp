#pragma once
/// @file device_stage_timing.hpp
/// How a StageTimers times its scopes on a CUDA device, so that a scope's time covers its
/// kernels and not their launches only: CUDA events read later (no wait when a scope closes)
/// where the build has them, else a device wait when each scope opens and closes.
#include <c10/core/Device.h>

#include <memory>

#include "core/interval_clock.hpp"
#include "core/timer.hpp"

namespace nnvmc::batching {

/// Empty on the host. Must outlive the scopes of the timers it is attached to and their next
/// stages() call (declare it before the StageTimers it serves).
struct DeviceStageTiming {
  std::unique_ptr<IntervalClock> clock;  ///< CUDA events (batching::CudaIntervalClock)
  std::unique_ptr<StageObserver> waits;  ///< a device wait at every scope boundary
  /// Makes `timers` time the scopes opened from now on this way.
  void attach(StageTimers& timers) const;
};

/// The timing for `device`: nothing on the host; on CUDA, events where this build has them and
/// `waits` is false, else device waits (`waits`: for comparisons, NNVMC_STAGE_SYNC=1).
DeviceStageTiming device_stage_timing(const c10::Device& device, bool waits = false);

}  // namespace nnvmc::batching
