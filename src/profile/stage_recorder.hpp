#pragma once
/// @file stage_recorder.hpp
/// A StageObserver for `nnvmc profile`: the peak working memory of each stage (a
/// batching::PeakMemoryScope per scope: the counting CPU allocator, or the CUDA caching
/// allocator), profiler ranges named after the stages while the operator profiler runs, and on
/// CUDA the device time of each stage from CUDA events (batching::CudaEventClock) with a device
/// synchronisation at stage boundaries (so a stage's wall time covers its kernels too).
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "batching/cuda_runtime.hpp"
#include "core/timer.hpp"

namespace nnvmc::profile {

/// Prefix of the profiler ranges that mark stages ("nnvmc.stage:sampling").
inline const std::string kStageRangePrefix = "nnvmc.stage:";

class StageRecorder final : public StageObserver {
 public:
  /// @param cuda_device device whose memory is counted and synchronised (−1: the CPU)
  explicit StageRecorder(int cuda_device = -1);
  ~StageRecorder() override;
  void begin(const std::string& stage) override;
  void end(const std::string& stage) override;
  /// Peak working memory per stage since the last call (max over the stage's scopes), bytes.
  std::map<std::string, std::int64_t> take_peaks();
  /// Tensor memory already held when each stage began since the last call (max over its
  /// scopes), bytes.
  std::map<std::string, std::int64_t> take_held();
  /// Device seconds per stage from CUDA events since the last call (summed over its scopes);
  /// empty on the CPU or where the build has no CUDA events.
  std::map<std::string, double> take_device_seconds();
  /// Whether stage times come from CUDA events (a CUDA device, and the build has them).
  bool event_clock() const { return cuda_device_ >= 0 && event_clock_; }
  /// Opens profiler ranges around stages from now on (while the operator profiler runs).
  void set_ranges(bool on) { ranges_ = on; }

 private:
  struct Open;
  void synchronize() const;
  std::vector<std::unique_ptr<Open>> stack_;
  std::map<std::string, std::int64_t> peaks_, held_;
  std::map<std::string, double> device_seconds_;
  std::vector<std::unique_ptr<batching::CudaEventClock>> clocks_;  ///< [nesting depth]
  int cuda_device_;
  bool event_clock_ = true;
  bool ranges_ = false;
};

}  // namespace nnvmc::profile
