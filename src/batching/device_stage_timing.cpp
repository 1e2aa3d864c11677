#include "batching/device_stage_timing.hpp"

#include <string>

#include "batching/backend.hpp"
#include "batching/cuda_runtime.hpp"

namespace nnvmc::batching {

namespace {
/// Waits for `device` when a scope opens and when it closes.
class DeviceWaits final : public StageObserver {
 public:
  explicit DeviceWaits(c10::Device device) : device_(device) {}
  void begin(const std::string&) override { synchronize_device(device_); }
  void end(const std::string&) override { synchronize_device(device_); }

 private:
  c10::Device device_;
};
}  // namespace

void DeviceStageTiming::attach(StageTimers& timers) const {
  if (clock) timers.set_clock(clock.get());
  if (waits) timers.set_observer(waits.get());
}

DeviceStageTiming device_stage_timing(const c10::Device& device, bool waits) {
  DeviceStageTiming t;
  if (!device.is_cuda()) return t;
  if (!waits && built_with_cuda())
    t.clock = std::make_unique<CudaIntervalClock>(with_index(device).index());
  else
    t.waits = std::make_unique<DeviceWaits>(device);
  return t;
}

}  // namespace nnvmc::batching
