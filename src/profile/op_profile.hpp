#pragma once
/// @file op_profile.hpp
/// Operator mix per stage from libtorch's own profiler (Kineto, C++ API): every operator (or
/// CUDA kernel) is attributed to the innermost stage range (StageRecorder) it ran in and to
/// the stages containing that one; time is self time (an operator's own time, without the
/// operators it called), grouped by OpGroup, with call counts and FLOP / byte estimates.
#include <map>
#include <string>
#include <vector>

#include "profile/op_groups.hpp"

namespace nnvmc::profile {

/// One operator group within a stage (totals over the profiled iterations).
struct GroupStats {
  double seconds = 0;         ///< self time
  double calls = 0;           ///< operator calls (kernels on CUDA)
  double flops = 0;           ///< estimated FLOPs (the profiler's own count where it reports one)
  double bytes = 0;           ///< estimated bytes read and written
  double reported_flops = 0;  ///< FLOPs the profiler itself reported
};

/// The operator mix of one stage (totals over the profiled iterations).
struct StageOps {
  double wall_seconds = 0;                   ///< the stage's wall time (sum of its ranges)
  std::map<std::string, GroupStats> groups;  ///< by group_name()
  std::map<std::string, double> op_seconds;  ///< self time by operator name
  double coverage = 0;  ///< Σ operator self time / wall time (median over iterations after median_of)
  double seconds() const;  ///< Σ group self time
  double flops() const;    ///< Σ group FLOPs
  double bytes() const;    ///< Σ group bytes
};

/// Element-wise median over profiled iterations (each a stop() result): every stage's wall
/// time, and each group's time, calls, FLOPs and bytes, and each operator's time, is the
/// median of its values (0 where absent), so one iteration slowed by the OS does not skew it.
std::map<std::string, StageOps> median_of(const std::vector<std::map<std::string, StageOps>>& iterations);

/// Stage name used for operators outside every stage range.
inline const std::string kOutsideStages = "(outside stages)";

/// Runs the profiler between start() and stop() on the calling thread.
class OpProfiler {
 public:
  /// @param cuda also record CUDA kernels (their time replaces the CPU operators' time)
  /// @param default_element_bytes element size assumed for tensor-list inputs
  OpProfiler(bool cuda, int default_element_bytes);
  /// Disables a profiler still running (an exception or Ctrl-C between start and stop), so
  /// later work in the process is not recorded.
  ~OpProfiler();
  OpProfiler(const OpProfiler&) = delete;
  OpProfiler& operator=(const OpProfiler&) = delete;
  void start();
  /// Stops and returns the mix per stage (each stage includes its sub-stages "stage.part").
  std::map<std::string, StageOps> stop();

 private:
  bool cuda_;
  int default_element_bytes_;
  bool running_ = false;
};

}  // namespace nnvmc::profile
