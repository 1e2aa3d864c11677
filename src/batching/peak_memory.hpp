#pragma once
/// @file peak_memory.hpp
/// Peak working memory of a region of code on the CPU, counted by a thin wrapper around
/// libtorch's CPU allocator (every tensor allocation, on every thread). Torch-free header.
#include <cstdint>

namespace nnvmc::batching {

/// Measures the high-water mark of CPU tensor memory between construction and peak_bytes(),
/// relative to what was allocated at construction (i.e. the region's working memory; tensors
/// that existed before are not counted). Scopes nest (an enclosing scope still sees the
/// peak reached inside an inner one); open and close them on one thread, innermost first.
class PeakMemoryScope {
 public:
  PeakMemoryScope();
  ~PeakMemoryScope();
  PeakMemoryScope(const PeakMemoryScope&) = delete;
  PeakMemoryScope& operator=(const PeakMemoryScope&) = delete;

  /// Highest (allocated − allocated at construction) seen so far, in bytes (≥ 0).
  std::int64_t peak_bytes() const;

  /// Bytes of CPU tensor memory allocated right now (through the tracked allocator).
  static std::int64_t current_bytes();

 private:
  std::int64_t base_;        ///< bytes allocated when the scope opened
  std::int64_t outer_peak_;  ///< high-water mark of the enclosing scope when this one opened
};

}  // namespace nnvmc::batching
