#include "batching/peak_memory.hpp"

#include <ATen/Context.h>
#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <torch/cuda.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <map>
#include <string>

#include "batching/backend.hpp"
#include "batching/budget.hpp"
#include "core/errors.hpp"

namespace nnvmc::batching {

namespace {

/// Forwards to the allocator that was installed before it and counts live bytes and their
/// maximum. Installed once, on first use; tensors allocated earlier keep their own deleters
/// and are simply not counted when freed.
class CountingCpuAllocator final : public c10::Allocator {
 public:
  explicit CountingCpuAllocator(c10::Allocator* base) : base_(base) {}

  c10::DataPtr allocate(size_t n) override {
    const auto bytes = static_cast<std::int64_t>(n);
    const std::int64_t now = current_.fetch_add(bytes) + bytes;
    if (now > limit_.load()) {
      current_.fetch_sub(bytes);
      throw WorkingMemoryExceeded("a tensor of " + format_bytes(double(n)) + " would exceed the working-memory cap");
    }
    Context* ctx = nullptr;
    try {
      ctx = new Context{base_->allocate(n), bytes, this};
    } catch (...) {
      current_.fetch_sub(bytes);
      throw;
    }
    std::int64_t seen = peak_.load();
    while (now > seen && !peak_.compare_exchange_weak(seen, now)) {
    }
    void* data = ctx->inner.get();
    const auto device = ctx->inner.device();
    return {data, ctx, &release, device};
  }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    base_->copy_data(dest, src, count);
  }

  std::int64_t current() const { return current_.load(); }
  /// Sets the absolute limit on current() (INT64_MAX: none) and returns the previous one.
  std::int64_t exchange_limit(std::int64_t limit) { return limit_.exchange(limit); }
  std::int64_t peak() const { return peak_.load(); }
  /// Starts a new high-water mark and returns the previous one (for nested scopes).
  std::int64_t restart_peak() { return peak_.exchange(current_.load()); }
  /// Folds an enclosing scope's high-water mark back in when a nested scope ends.
  void merge_peak(std::int64_t outer) {
    std::int64_t seen = peak_.load();
    while (outer > seen && !peak_.compare_exchange_weak(seen, outer)) {
    }
  }

 private:
  struct Context {
    c10::DataPtr inner;  ///< the base allocator's block (freed with the context)
    std::int64_t bytes;
    CountingCpuAllocator* owner;
  };
  static void release(void* p) {
    auto* ctx = static_cast<Context*>(p);
    ctx->owner->current_.fetch_sub(ctx->bytes);
    delete ctx;
  }

  c10::Allocator* base_;
  std::atomic<std::int64_t> current_{0}, peak_{0};
  std::atomic<std::int64_t> limit_{std::numeric_limits<std::int64_t>::max()};
};

CountingCpuAllocator& counting_allocator() {
  // Leaked on purpose: tensors freed during static destruction still call into it.
  static CountingCpuAllocator* a = [] {
    auto* alloc = new CountingCpuAllocator(c10::GetCPUAllocator());
    c10::SetCPUAllocator(alloc, /*priority=*/100);
    return alloc;
  }();
  return *a;
}

/// libtorch's CUDA caching allocator (loads libtorch_cuda.so on first use).
c10::DeviceAllocator& cuda_allocator(int device) {
  const std::string name = "cuda:" + std::to_string(device);
  ensure_device_runtime(name);
  const auto n = torch::cuda::device_count();
  if (device >= static_cast<int>(n))
    throw InputError("peak memory of " + name + ": this machine has " + std::to_string(n) + " CUDA device(s)");
  // The caching allocator is set up by CUDA's lazy initialisation (the first CUDA tensor);
  // before it, its statistics calls fail ("did you call init?"). A scope may open first.
  at::globalContext().lazyInitDevice(c10::DeviceType::CUDA);
  return *c10::getDeviceAllocator(c10::DeviceType::CUDA);
}

/// Allocated bytes of a CUDA device: {current, peak since the last reset}.
std::pair<std::int64_t, std::int64_t> cuda_allocated(int device) {
  const auto stats = cuda_allocator(device).getDeviceStats(static_cast<c10::DeviceIndex>(device));
  const auto& s = stats.allocated_bytes[static_cast<std::size_t>(c10::CachingAllocator::StatType::AGGREGATE)];
  return {s.current, s.peak};
}

/// Innermost open CUDA scope per device (scopes open and close on one thread).
thread_local std::map<int, PeakMemoryScope*> innermost_cuda_scope;

}  // namespace

PeakMemoryScope::PeakMemoryScope() {
  auto& a = counting_allocator();
  outer_peak_ = a.restart_peak();
  base_ = a.current();
}

PeakMemoryScope::PeakMemoryScope(int cuda_device) : cuda_device_(cuda_device) {
  if (cuda_device < 0) {
    auto& a = counting_allocator();
    outer_peak_ = a.restart_peak();
    base_ = a.current();
    return;
  }
  const auto [current, peak] = cuda_allocated(cuda_device);
  auto& top = innermost_cuda_scope[cuda_device];
  parent_ = top;
  if (parent_) parent_->seen_peak_ = std::max(parent_->seen_peak_, peak);  // before the reset
  top = this;
  cuda_allocator(cuda_device).resetPeakStats(static_cast<c10::DeviceIndex>(cuda_device));
  base_ = current;
  seen_peak_ = current;
}

PeakMemoryScope::~PeakMemoryScope() {
  if (cuda_device_ < 0) {
    counting_allocator().merge_peak(outer_peak_);
    return;
  }
  innermost_cuda_scope[cuda_device_] = parent_;
  if (parent_) {
    try {
      parent_->seen_peak_ = std::max(parent_->seen_peak_, cuda_allocated(cuda_device_).second);
    } catch (...) {  // a destructor must not throw; the parent then misses this scope's peak
    }
  }
}

std::int64_t PeakMemoryScope::peak_bytes() const {
  const std::int64_t peak =
      cuda_device_ < 0 ? counting_allocator().peak() : std::max(cuda_allocated(cuda_device_).second, seen_peak_);
  return std::max<std::int64_t>(peak - base_, 0);
}

std::int64_t PeakMemoryScope::current_bytes() { return counting_allocator().current(); }

WorkingMemoryCap::WorkingMemoryCap(std::int64_t bytes) {
  auto& a = counting_allocator();
  const std::int64_t base = a.current();
  const std::int64_t limit =
      bytes >= std::numeric_limits<std::int64_t>::max() - base ? std::numeric_limits<std::int64_t>::max() : base + bytes;
  outer_limit_ = a.exchange_limit(limit);
  if (outer_limit_ < limit) a.exchange_limit(outer_limit_);  // an enclosing cap is tighter: it holds
}

WorkingMemoryCap::~WorkingMemoryCap() { counting_allocator().exchange_limit(outer_limit_); }

}  // namespace nnvmc::batching
