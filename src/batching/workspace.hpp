#pragma once
/// @file workspace.hpp
/// Buffers the executor reuses: across the batches of one execution and, when the caller
/// keeps one in PlanOptions::workspace, across executions (every CCSD iteration runs the
/// same plans). On the CPU a fresh buffer of tens of MiB costs its page faults on first
/// touch (glibc maps large blocks and unmaps them on free), which on the ladder term took as
/// long as the GEMMs that fill it; a reused buffer costs nothing.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>

namespace nnvmc::batching {

/// Exact-size buffer reuse under a byte limit: take() hands out an idle buffer of exactly the
/// requested byte size, dtype and device, or else releases idle buffers (least recently used
/// first) until the buffers held plus the new one fit `limit`, and makes a new one. So after a
/// creation the workspace holds at most max(limit, bytes in use + the new buffer): with the
/// plan's budget as the limit (its accounted peak when unlimited) it never holds more than
/// the budget, and idle buffers of other plans survive while they fit. Thread-safe.
class Workspace {
 public:
  /// A contiguous tensor of `shape` with `options` (its contents are undefined), at the start
  /// of a buffer of max(numel, capacity) elements (callers that ask for the same capacity
  /// with smaller shapes share buffers).
  at::Tensor take(at::IntArrayRef shape, const at::TensorOptions& options, std::int64_t capacity = 0,
                  std::int64_t limit = 0);
  /// Returns the buffer that `t` (from take(), or any view of it) uses to the idle set; `t`
  /// must not be used afterwards. Unknown tensors are ignored.
  void give(const at::Tensor& t);
  /// Frees every idle buffer.
  void release();
  std::int64_t held_bytes() const;   ///< bytes of all buffers, in use or idle
  std::int64_t idle_bytes() const;   ///< bytes of idle buffers
  std::int64_t created() const;      ///< buffers made so far (reuse keeps this flat)

 private:
  using Key = std::tuple<std::int64_t, int, int, int>;  ///< bytes, dtype, device type, device index
  static Key key_of(std::int64_t bytes, const at::TensorOptions& options);
  mutable std::mutex mu_;
  struct Idle {
    at::Tensor buf;
    std::int64_t last_used = 0;
  };
  std::multimap<Key, Idle> idle_;
  std::int64_t clock_ = 0;
  std::map<const void*, std::pair<Key, at::Tensor>> busy_;
  std::int64_t held_ = 0, idle_bytes_ = 0, created_ = 0;
};

}  // namespace nnvmc::batching
