#pragma once
/// @file stage_recorder.hpp
/// A StageObserver for `nnvmc profile`: the peak working memory of each stage (a
/// batching::PeakMemoryScope per scope: the counting CPU allocator, or the CUDA caching
/// allocator), profiler ranges named after the stages while the operator profiler runs, and
/// device synchronisation at stage boundaries on CUDA (so a stage's wall time covers its kernels).
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

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
  /// Opens profiler ranges around stages from now on (while the operator profiler runs).
  void set_ranges(bool on) { ranges_ = on; }

 private:
  struct Open;
  void synchronize() const;
  std::vector<std::unique_ptr<Open>> stack_;
  std::map<std::string, std::int64_t> peaks_;
  int cuda_device_;
  bool ranges_ = false;
};

}  // namespace nnvmc::profile
