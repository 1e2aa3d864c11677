#include "profile/stage_recorder.hpp"

#include <ATen/record_function.h>

#include <algorithm>

#include "batching/backend.hpp"
#include "batching/cuda_runtime.hpp"
#include "batching/peak_memory.hpp"
#include "core/errors.hpp"

namespace nnvmc::profile {

struct StageRecorder::Open {
  std::string stage;
  std::string range_name;
  std::unique_ptr<batching::PeakMemoryScope> peak;
  std::unique_ptr<at::RecordFunction> range;
  batching::CudaEventClock* clock = nullptr;  ///< on CUDA: the stage's device time (clocks_, by depth)
};

StageRecorder::StageRecorder(int cuda_device) : cuda_device_(cuda_device) {}
StageRecorder::~StageRecorder() = default;

void StageRecorder::synchronize() const {
  if (cuda_device_ >= 0) batching::synchronize_device(c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(cuda_device_)));
}

void StageRecorder::begin(const std::string& stage) {
  synchronize();  // earlier work is not this stage's
  auto open = std::make_unique<Open>();
  open->stage = stage;
  open->peak = std::make_unique<batching::PeakMemoryScope>(cuda_device_);
  if (cuda_device_ >= 0 && event_clock_) {
    try {  // one clock per nesting depth, made once and reused every iteration
      if (clocks_.size() <= stack_.size()) clocks_.push_back(std::make_unique<batching::CudaEventClock>(cuda_device_));
      open->clock = clocks_[stack_.size()].get();
      open->clock->start();
    } catch (const Error&) {  // a build without CUDA events: the host clock after a synchronise
      open->clock = nullptr;
      event_clock_ = false;
    }
  }
  if (ranges_) {
    open->range_name = kStageRangePrefix + stage;
    open->range = std::make_unique<at::RecordFunction>(at::RecordScope::USER_SCOPE);
    if (open->range->isActive()) open->range->before(std::string_view(open->range_name));
  }
  stack_.push_back(std::move(open));
}

void StageRecorder::end(const std::string& stage) {
  // the stop event goes in behind the stage's kernels before the host waits for them
  const bool mine = !stack_.empty() && stack_.back()->stage == stage;
  if (mine && stack_.back()->clock) device_seconds_[stage] += stack_.back()->clock->stop_seconds();
  synchronize();  // this stage's kernels are done
  if (!mine) return;  // scopes close innermost first
  auto& open = *stack_.back();
  auto& p = peaks_[stage];
  p = std::max(p, open.peak->peak_bytes());
  held_[stage] = std::max(held_[stage], open.peak->held_bytes());
  if (open.range && open.range->isActive()) open.range->end();
  stack_.pop_back();
}

std::map<std::string, double> StageRecorder::take_device_seconds() {
  std::map<std::string, double> out;
  out.swap(device_seconds_);
  return out;
}

std::map<std::string, std::int64_t> StageRecorder::take_held() {
  std::map<std::string, std::int64_t> out;
  out.swap(held_);
  return out;
}

std::map<std::string, std::int64_t> StageRecorder::take_peaks() {
  std::map<std::string, std::int64_t> out;
  out.swap(peaks_);
  return out;
}

}  // namespace nnvmc::profile
