#pragma once
/// @file timer.hpp
/// Wall-clock stage timers: accumulate seconds per named stage (sampling, laplacian, ...).
/// A stage name with a dot ("local_energy.laplacian") is a part of the stage before the dot
/// and is timed inside it. An optional observer sees every scope open and close (profiling:
/// peak memory per stage, profiler ranges, device synchronisation).
#include <chrono>
#include <map>
#include <string>

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
    Scope(StageTimers& t, std::string stage) : t_(t), stage_(std::move(stage)), observer_(t.observer_) {
      if (observer_) observer_->begin(stage_);
      start_ = std::chrono::steady_clock::now();
    }
    ~Scope() {
      if (observer_) observer_->end(stage_);
      const std::chrono::duration<double> d = std::chrono::steady_clock::now() - start_;
      auto& e = t_.stages_[stage_];
      e.seconds += d.count();
      e.calls += 1;
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    StageTimers& t_;
    std::string stage_;
    StageObserver* observer_;
    std::chrono::steady_clock::time_point start_;
  };
  struct Entry {
    double seconds = 0;  ///< accumulated wall time
    long calls = 0;      ///< number of scopes
  };
  Scope scope(std::string stage) { return Scope(*this, std::move(stage)); }
  const std::map<std::string, Entry>& stages() const { return stages_; }
  void reset() { stages_.clear(); }
  /// Observer of scopes opened from now on (nullptr: none). Not owned.
  void set_observer(StageObserver* observer) { observer_ = observer; }

 private:
  std::map<std::string, Entry> stages_;
  StageObserver* observer_ = nullptr;
};

}  // namespace nnvmc
