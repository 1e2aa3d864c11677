#include "batching/peak_memory.hpp"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>

#include <atomic>

namespace nnvmc::batching {

namespace {

/// Forwards to the allocator that was installed before it and counts live bytes and their
/// maximum. Installed once, on first use; tensors allocated earlier keep their own deleters
/// and are simply not counted when freed.
class CountingCpuAllocator final : public c10::Allocator {
 public:
  explicit CountingCpuAllocator(c10::Allocator* base) : base_(base) {}

  c10::DataPtr allocate(size_t n) override {
    auto* ctx = new Context{base_->allocate(n), static_cast<std::int64_t>(n), this};
    const std::int64_t now = current_.fetch_add(ctx->bytes) + ctx->bytes;
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

}  // namespace

PeakMemoryScope::PeakMemoryScope() {
  auto& a = counting_allocator();
  outer_peak_ = a.restart_peak();
  base_ = a.current();
}

PeakMemoryScope::~PeakMemoryScope() { counting_allocator().merge_peak(outer_peak_); }

std::int64_t PeakMemoryScope::peak_bytes() const {
  const auto p = counting_allocator().peak() - base_;
  return p > 0 ? p : 0;
}

std::int64_t PeakMemoryScope::current_bytes() { return counting_allocator().current(); }

}  // namespace nnvmc::batching
