#pragma once
/// @file timer.hpp
/// Wall-clock stage timers: accumulate seconds per named stage (sampling, laplacian, ...).
/// A stage name with a dot ("local_energy.laplacian") is a part of the stage before the dot
/// and is timed inside it. An optional observer sees every scope open and close (profiling:
/// peak memory per stage, profiler ranges, device synchronisation); an optional interval clock
/// times the scopes instead of the host's clock (a GPU's device time, read when asked for).
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "core/interval_clock.hpp"

namespace nnvmc {

/// Sees the stage scopes of a StageTimers open and close (on the thread that opens them).
class StageObserver {
 public:
  virtual ~StageObserver() = default;
  virtual void begin(const std::string& stage) = 0;  ///< before the stage's clock starts
  /// Before the stage's clock stops (a device synchronisation here counts toward the stage).
  virtual void end(const std::string& stage) = 0;
};

/// Accumulates wall time and call counts per stage name.
class StageTimers {
 public:
  /// RAII scope adding its lifetime to `stage`.
  class Scope {
   public:
    Scope(StageTimers& t, std::string stage);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    StageTimers& t_;
    std::string stage_;
    StageObserver* observer_;
    IntervalClock* clock_;
    std::int64_t interval_ = -1;  ///< the clock's interval (with a clock)
    std::chrono::steady_clock::time_point start_;
  };
  struct Entry {
    /// Accumulated wall time; with a clock (set_clock), the clock's (a GPU's device time).
    double seconds = 0;
    long calls = 0;  ///< number of scopes
  };
  Scope scope(std::string stage) { return Scope(*this, std::move(stage)); }
  /// Per stage. With a clock, first collects the clock's times of the scopes closed so far
  /// (on a GPU: waits for the device to reach their ends).
  const std::map<std::string, Entry>& stages() const;
  void reset();
  /// Observer of scopes opened from now on (nullptr: none). Not owned.
  void set_observer(StageObserver* observer) { observer_ = observer; }
  /// Times scopes opened from now on by `clock` rather than the host's steady clock (nullptr:
  /// the host's again): on a GPU, device time without a wait for the device when a scope
  /// closes. Not owned; must outlive the scopes it times. Collects the previous clock's times
  /// first (set_clock(nullptr) before the clock goes).
  void set_clock(IntervalClock* clock);

 private:
  /// Adds the clock times of closed scopes to their stages (`wait`: all of them).
  void collect(IntervalClock* clock, bool wait) const;
  mutable std::map<std::string, Entry> stages_;
  StageObserver* observer_ = nullptr;
  IntervalClock* clock_ = nullptr;
  /// Closed scopes whose clock time has not been collected: (clock, interval) → stage.
  mutable std::map<std::pair<IntervalClock*, std::int64_t>, std::string> uncollected_;
};

}  // namespace nnvmc
