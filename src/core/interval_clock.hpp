#pragma once
/// @file interval_clock.hpp
/// A clock of many intervals whose lengths are read later, not when each ends: the device time
/// of work queued on a GPU (batching::CudaIntervalClock) without a wait for the device at the
/// end of every interval. Torch- and CUDA-free.
#include <cstdint>
#include <utility>
#include <vector>

namespace nnvmc {

class IntervalClock {
 public:
  virtual ~IntervalClock() = default;
  /// Starts a new interval; returns its id (0, 1, 2, ... in order of begin()).
  virtual std::int64_t begin() = 0;
  /// Ends interval `id` (no wait). Intervals may be open at the same time (nested stages).
  virtual void end(std::int64_t id) = 0;
  /// (id, seconds) of the ended intervals not yet harvested, in id order (open ones stay for a
  /// later call). `wait`: all of them (waiting for the device to reach their ends); otherwise
  /// only those already known (never blocks).
  virtual std::vector<std::pair<std::int64_t, double>> harvest(bool wait) = 0;
};

}  // namespace nnvmc
