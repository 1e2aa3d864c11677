#pragma once
/// A DeviceOps on the host for testing the staged GEMM pipeline without a GPU. Work enqueued on
/// a stream is not run when it is enqueued but only when something forces it (an event the
/// host synchronizes on, a stream wait, synchronize_all), so a missing dependency shows up as
/// wrong numbers instead of a race that a fast machine hides:
///  - Order::lazy runs only what is forced (the host overwriting a pinned buffer before the
///    copy from it ran, or reading a result before its download, is caught);
///  - Order::run_ahead, whenever anything is forced, first runs every *other* stream as far as
///    it can (a copy overwriting a device buffer a queued GEMM still has to read is caught;
///    a download leaving before its GEMM is caught by the lazy order).
/// Fresh buffers are filled with NaN bytes; freeing a buffer that queued work still uses
/// throws. GEMMs are computed from the column-major (cuBLAS) arguments of batching::column_major,
/// so that mapping is checked too.
#include <ATen/ATen.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <map>
#include <stdexcept>
#include <vector>

#include "batching/device_ops.hpp"

namespace nnvmc::test {

class HostDeviceOps final : public batching::DeviceOps {
 public:
  enum class Order { lazy, run_ahead };
  explicit HostDeviceOps(Order order, std::size_t device_bytes = std::size_t(1) << 30)
      : order_(order), free_(device_bytes) {}
  ~HostDeviceOps() override {
    for (auto [p, bytes] : device_) std::free(p);
    for (auto [p, bytes] : host_) std::free(p);
  }

  void* device_alloc(std::size_t bytes) override {
    ++device_allocations_;
    void* p = alloc(bytes, device_);
    device_in_use_ += bytes;
    device_peak_ = std::max(device_peak_, device_in_use_);
    return p;
  }
  void device_free(void* p) override {
    const auto it = device_.find(p);
    const std::size_t bytes = it == device_.end() ? 0 : it->second;
    release(p, device_);
    device_in_use_ -= bytes;
  }
  /// Checks the promise of recycle_events (every event complete) and invalidates the old handles.
  void recycle_events() override {
    for (const auto& [stream, pos] : events_)
      if (done_[stream] < pos) throw std::logic_error("HostDeviceOps: recycling an event that has not completed");
    valid_from_ = events_.size();
    ++recycles_;
  }
  void* host_alloc(std::size_t bytes) override { return alloc(bytes, host_); }
  void host_free(void* p) override { release(p, host_); }

  void copy_to_device(void* dst, const void* src, std::size_t bytes, batching::Stream s) override {
    enqueue(s, [=] { std::memcpy(dst, src, bytes); }, {dst, src});
  }
  void copy_to_host(void* dst, const void* src, std::size_t bytes, batching::Stream s) override {
    enqueue(s, [=] { std::memcpy(dst, src, bytes); }, {dst, src});
  }
  void gemm(const batching::GemmCall& g, batching::Stream s) override {
    const auto cm = batching::column_major(g);
    enqueue(s, [g, cm] {
      const auto opt = at::TensorOptions().dtype(g.f64 ? at::kDouble : at::kFloat);
      // a column-major rows×cols matrix with leading dimension ld, `stride` apart per batch
      const auto view = [&](const void* p, std::int64_t rows, std::int64_t cols, std::int64_t ld, std::int64_t stride) {
        const std::int64_t n = (g.batch - 1) * stride + (cols - 1) * ld + rows;
        return at::from_blob(const_cast<void*>(p), {n}, opt).as_strided({g.batch, rows, cols}, {stride, 1, ld});
      };
      auto x = view(cm.first, cm.trans_first ? cm.k : cm.m, cm.trans_first ? cm.m : cm.k, cm.ld_first, cm.stride_first);
      auto y = view(cm.second, cm.trans_second ? cm.n : cm.k, cm.trans_second ? cm.k : cm.n, cm.ld_second,
                    cm.stride_second);
      if (cm.trans_first) x = x.transpose(1, 2);
      if (cm.trans_second) y = y.transpose(1, 2);
      auto c = view(g.c, cm.m, cm.n, cm.ldc, cm.stride_c);
      const auto r = at::bmm(x, y);
      g.accumulate ? c.add_(r) : c.copy_(r);
    }, {g.a, g.b, g.c});
  }
  void strided_copy(const batching::StridedCopy& c, batching::Stream s) override {
    ++strided_copies_;
    enqueue(s, [c] {
      const auto opt = at::TensorOptions().dtype(c.f64 ? at::kDouble : at::kFloat);
      const std::vector<std::int64_t> sizes(c.sizes, c.sizes + c.rank), strides(c.strides, c.strides + c.rank);
      std::int64_t span = 1, n = 1;
      for (int d = 0; d < c.rank; ++d) span += (c.sizes[d] - 1) * c.strides[d], n *= c.sizes[d];
      if (n == 0) return;
      const auto src = at::from_blob(const_cast<void*>(c.src), {span}, opt).as_strided(sizes, strides);
      at::from_blob(c.dst, sizes, opt).copy_(src);
    }, {c.src, c.dst});
  }
  Event record(batching::Stream s) override {
    events_.push_back({idx(s), queues_[idx(s)].size()});
    return Event(events_.size() - 1);
  }
  void wait(batching::Stream s, Event e) override {
    const auto [stream, pos] = event(e);
    queues_[idx(s)].push_back(Task{nullptr, stream, pos, {}});
  }
  void synchronize(Event e) override {
    const auto [stream, pos] = event(e);
    force(stream, pos);
  }
  void synchronize_all() override {
    for (int s = 0; s < 3; ++s) force(s, queues_[s].size());
  }
  std::size_t free_device_bytes() override { return free_; }

  /// Times the backend declared all events complete (recycle_events).
  int recycles() const { return recycles_; }
  /// Device buffers allocated so far.
  int device_allocations() const { return device_allocations_; }
  /// The most device memory held at once so far (bytes).
  std::size_t peak_device_bytes() const { return device_peak_; }
  /// Layout copies made on the device so far (strided_copy).
  int strided_copies() const { return strided_copies_; }
  /// Tasks enqueued so far (copies, GEMMs and waits).
  std::size_t tasks() const { return queues_[0].size() + queues_[1].size() + queues_[2].size(); }

 private:
  static int idx(batching::Stream s) { return static_cast<int>(s); }
  std::pair<int, std::size_t> event(Event e) const {
    if (e < 0 || std::size_t(e) < valid_from_) throw std::logic_error("HostDeviceOps: use of a recycled event");
    return events_.at(std::size_t(e));
  }
  void* alloc(std::size_t bytes, std::map<void*, std::size_t>& pool) {
    void* p = std::malloc(bytes ? bytes : 1);
    std::memset(p, 0xFF, bytes);  // NaN in float64 and float32
    pool[p] = bytes;
    return p;
  }
  /// Frees `p`; queued work that uses any address inside it (operands at offsets too) is an error.
  void release(void* p, std::map<void*, std::size_t>& pool) {
    const auto it = pool.find(p);
    if (it == pool.end()) throw std::logic_error("HostDeviceOps: freeing an unknown buffer");
    const auto* lo = static_cast<const char*>(p);
    const auto* hi = lo + std::max<std::size_t>(it->second, 1);
    for (int s = 0; s < 3; ++s)
      for (std::size_t t = done_[s]; t < queues_[s].size(); ++t)
        for (const void* u : queues_[s][t].uses)
          if (static_cast<const char*>(u) >= lo && static_cast<const char*>(u) < hi)
            throw std::logic_error("HostDeviceOps: freeing a buffer that queued work still uses");
    pool.erase(it);
    std::free(p);
  }
  /// A copy or GEMM (f), or a wait until stream `dep` has done `pos` tasks.
  struct Task {
    std::function<void()> f;
    int dep = -1;
    std::size_t pos = 0;
    std::vector<const void*> uses;  ///< buffers the task reads or writes
  };
  void enqueue(batching::Stream s, std::function<void()> f, std::vector<const void*> uses) {
    queues_[idx(s)].push_back(Task{std::move(f), -1, 0, std::move(uses)});
  }
  /// Runs stream s until `pos` of its tasks are done, forcing what its waits depend on.
  void force(int s, std::size_t pos) {
    if (order_ == Order::run_ahead) run_others_ahead(s);
    while (done_[s] < pos) {
      const Task& t = queues_[s][done_[s]];
      if (t.dep >= 0) {
        if (running_[t.dep] && done_[t.dep] < t.pos)
          throw std::logic_error("HostDeviceOps: streams wait for each other (deadlock)");
        running_[s] = true;
        force(t.dep, t.pos);
        running_[s] = false;
      } else {
        t.f();
      }
      ++done_[s];
    }
  }
  /// Runs every other stream not blocked in a wait as far as it goes without forcing anything.
  void run_others_ahead(int s) {
    for (bool progress = true; progress;) {
      progress = false;
      for (int o = 0; o < 3; ++o) {
        if (o == s || running_[o]) continue;
        while (done_[o] < queues_[o].size()) {
          const Task& t = queues_[o][done_[o]];
          if (t.dep >= 0 && done_[t.dep] < t.pos) break;
          if (t.dep < 0) t.f();
          ++done_[o];
          progress = true;
        }
      }
    }
  }

  Order order_;
  std::size_t free_;
  std::array<std::vector<Task>, 3> queues_;
  std::array<std::size_t, 3> done_{0, 0, 0};
  std::array<bool, 3> running_{false, false, false};
  std::vector<std::pair<int, std::size_t>> events_;
  int recycles_ = 0;
  int strided_copies_ = 0;
  int device_allocations_ = 0;
  std::size_t device_in_use_ = 0, device_peak_ = 0;
  std::size_t valid_from_ = 0;  ///< handles below this were recycled
  std::map<void*, std::size_t> device_, host_;  ///< live buffers and their sizes
};

}  // namespace nnvmc::test
