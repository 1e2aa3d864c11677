#pragma once
/// @file peak_memory.hpp
/// Peak working memory of a region of code: on the CPU counted by a thin wrapper around
/// libtorch's CPU allocator (every tensor allocation, on every thread); on a CUDA device read
/// from libtorch's caching allocator (allocated bytes, its peak statistic). Torch-free header.
#include <cstdint>

#include "core/errors.hpp"

namespace nnvmc::batching {

/// Thrown by a CPU tensor allocation that a WorkingMemoryCap refuses (before any memory is
/// taken).
struct WorkingMemoryExceeded : BudgetError {
  using BudgetError::BudgetError;
};

/// While alive, a CPU tensor allocation (on any thread) that would take the tensor memory
/// allocated since construction past `bytes` throws WorkingMemoryExceeded instead of
/// allocating. Measuring a computation that may not fit (one walker of a very large molecule)
/// under a cap turns what would be the kernel's OOM killer into a typed error. Caps nest (the
/// inner one holds while it lives); open and close them on one thread, innermost first. CUDA
/// memory is not capped (its allocator fails with an error of its own).
class WorkingMemoryCap {
 public:
  explicit WorkingMemoryCap(std::int64_t bytes);
  ~WorkingMemoryCap();
  WorkingMemoryCap(const WorkingMemoryCap&) = delete;
  WorkingMemoryCap& operator=(const WorkingMemoryCap&) = delete;

 private:
  std::int64_t outer_limit_ = 0;  ///< the enclosing cap's absolute limit (INT64_MAX: none)
};

/// Measures the high-water mark of tensor memory between construction and peak_bytes(),
/// relative to what was allocated at construction (i.e. the region's working memory; tensors
/// that existed before are not counted). Scopes nest (an enclosing scope still sees the
/// peak reached inside an inner one); open and close them on one thread, innermost first.
/// On CUDA the count is the caching allocator's allocated bytes of that device (blocks handed
/// to tensors, not the memory it reserved from the driver), so it is the same quantity as on
/// the CPU; the scope resets the allocator's peak statistic when it opens.
class PeakMemoryScope {
 public:
  /// CPU tensor memory.
  PeakMemoryScope();
  /// Tensor memory of CUDA device `cuda_device` (≥ 0), or of the CPU for −1.
  /// @throws InputError when that CUDA device does not exist or libtorch's CUDA runtime
  /// cannot be loaded.
  explicit PeakMemoryScope(int cuda_device);
  ~PeakMemoryScope();
  PeakMemoryScope(const PeakMemoryScope&) = delete;
  PeakMemoryScope& operator=(const PeakMemoryScope&) = delete;

  /// Highest (allocated − allocated at construction) seen so far, in bytes (≥ 0).
  std::int64_t peak_bytes() const;
  /// Bytes allocated when the scope opened (what is held from before: parameters, walkers,
  /// optimizer state, buffers kept between iterations).
  std::int64_t held_bytes() const { return base_; }

  /// Bytes of CPU tensor memory allocated right now (through the tracked allocator).
  static std::int64_t current_bytes();

 private:
  int cuda_device_ = -1;          ///< −1: CPU
  std::int64_t base_ = 0;         ///< bytes allocated when the scope opened
  std::int64_t outer_peak_ = 0;   ///< CPU: high-water mark of the enclosing scope when this one opened
  std::int64_t seen_peak_ = 0;    ///< CUDA: device peaks folded in by nested scopes (absolute bytes)
  PeakMemoryScope* parent_ = nullptr;  ///< CUDA: enclosing scope on the same device
};

}  // namespace nnvmc::batching
