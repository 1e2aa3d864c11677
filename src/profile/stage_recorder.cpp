#include "profile/stage_recorder.hpp"

#include <ATen/record_function.h>

#include <algorithm>

#include "batching/backend.hpp"
#include "batching/peak_memory.hpp"

namespace nnvmc::profile {

struct StageRecorder::Open {
  std::string stage;
  std::string range_name;
  std::unique_ptr<batching::PeakMemoryScope> peak;
  std::unique_ptr<at::RecordFunction> range;
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
  if (ranges_) {
    open->range_name = kStageRangePrefix + stage;
    open->range = std::make_unique<at::RecordFunction>(at::RecordScope::USER_SCOPE);
    if (open->range->isActive()) open->range->before(std::string_view(open->range_name));
  }
  stack_.push_back(std::move(open));
}

void StageRecorder::end(const std::string& stage) {
  synchronize();  // this stage's kernels are done
  if (stack_.empty() || stack_.back()->stage != stage) return;  // scopes close innermost first
  auto& open = *stack_.back();
  auto& p = peaks_[stage];
  p = std::max(p, open.peak->peak_bytes());
  if (open.range && open.range->isActive()) open.range->end();
  stack_.pop_back();
}

std::map<std::string, std::int64_t> StageRecorder::take_peaks() {
  std::map<std::string, std::int64_t> out;
  out.swap(peaks_);
  return out;
}

}  // namespace nnvmc::profile
