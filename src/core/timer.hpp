#pragma once
/// @file timer.hpp
/// Wall-clock stage timers: accumulate seconds per named stage (sampling, laplacian, ...).
#include <chrono>
#include <map>
#include <string>

namespace nnvmc {

/// Accumulates wall time and call counts per stage name.
class StageTimers {
 public:
  /// RAII scope adding its lifetime to `stage`.
  class Scope {
   public:
    Scope(StageTimers& t, std::string stage)
        : t_(t), stage_(std::move(stage)), start_(std::chrono::steady_clock::now()) {}
    ~Scope() {
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
    std::chrono::steady_clock::time_point start_;
  };
  struct Entry {
    double seconds = 0;  ///< accumulated wall time
    long calls = 0;      ///< number of scopes
  };
  Scope scope(std::string stage) { return Scope(*this, std::move(stage)); }
  const std::map<std::string, Entry>& stages() const { return stages_; }
  void reset() { stages_.clear(); }

 private:
  std::map<std::string, Entry> stages_;
};

}  // namespace nnvmc
