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

/// Exact-size buffer reuse that never holds more than the bytes in use at a creation:
/// take() hands out an idle buffer of exactly the requested byte size, dtype and device, or
/// else releases every idle buffer and then makes a new one. So at each creation the memory
/// held is the bytes in use plus the new buffer, and the executor's accounted peak (which
/// counts buffers in use) bounds what the workspace ever holds. Thread-safe.
class Workspace {
 public:
  /// A contiguous tensor of `shape` with `options` (its contents are undefined), at the start
  /// of a buffer of max(numel, capacity) elements (callers that ask for the same capacity
  /// with smaller shapes share buffers).
  at::Tensor take(at::IntArrayRef shape, const at::TensorOptions& options, std::int64_t capacity = 0);
  /// Returns the buffer that `t` (from take(), or a view starting at its first element) uses
  /// to the idle set; `t` must not be used afterwards. Unknown tensors are ignored.
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
  std::multimap<Key, at::Tensor> idle_;
  std::map<const void*, std::pair<Key, at::Tensor>> busy_;
  std::int64_t held_ = 0, idle_bytes_ = 0, created_ = 0;
};

}  // namespace nnvmc::batching
