#pragma once
/// @file kept_buffers.hpp
/// The device buffers of the intermediates a staged GEMM backend keeps on its device
/// (internal to staged_gemm.cpp): each stands for a host tensor's memory, found by any address
/// inside it, and goes back to a pool when released, for later intermediates of the same or a
/// later contraction (a CCSD run repeats its terms every iteration). Torch-free.
#include <algorithm>
#include <cstddef>
#include <map>
#include <optional>
#include <vector>

#include "batching/device_ops.hpp"
#include "core/errors.hpp"

namespace nnvmc::batching {

class KeptBuffers {
 public:
  struct Entry {
    const char* host = nullptr;  ///< the host memory it stands for (never written while kept)
    void* dev = nullptr;
    std::size_t bytes = 0;
  };

  explicit KeptBuffers(DeviceOps& ops) : ops_(ops) {}
  /// Frees every buffer; the caller has made the device idle.
  ~KeptBuffers() {
    release_all();
    for (auto& idle : pool_) {
      try {
        ops_.device_free(idle.dev);
      } catch (...) {  // destructors must not throw
      }
    }
  }
  KeptBuffers(const KeptBuffers&) = delete;
  KeptBuffers& operator=(const KeptBuffers&) = delete;

  /// A device buffer standing for host [host, host + bytes) (any entry starting there is
  /// released first): the smallest idle one that fits, else a new one.
  void* keep(const void* host, std::size_t bytes) {
    release(host);
    auto best = pool_.end();
    for (auto it = pool_.begin(); it != pool_.end(); ++it)
      if (it->capacity >= bytes && (best == pool_.end() || it->capacity < best->capacity)) best = it;
    Kept k{nullptr, bytes, std::max<std::size_t>(bytes, 1)};
    if (best != pool_.end()) {
      k.dev = best->dev, k.capacity = best->capacity;
      pool_.erase(best);
    } else {
      k.dev = device_alloc(k.capacity);
    }
    kept_[static_cast<const char*>(host)] = k;
    return k.dev;
  }

  /// The entry whose host memory contains `p`, if any.
  std::optional<Entry> find(const void* p) const {
    const auto* c = static_cast<const char*>(p);
    auto it = kept_.upper_bound(c);
    if (it == kept_.begin()) return std::nullopt;
    --it;
    if (c >= it->first + std::max<std::size_t>(it->second.bytes, 1)) return std::nullopt;
    return Entry{it->first, it->second.dev, it->second.bytes};
  }

  /// Forgets the entry starting at `host` (if any); its buffer goes to the pool. Its later users
  /// run on the same stream as its earlier ones, so stream order protects the reuse.
  void release(const void* host) {
    const auto it = kept_.find(static_cast<const char*>(host));
    if (it == kept_.end()) return;
    pool_.push_back(Idle{it->second.dev, it->second.capacity});
    kept_.erase(it);
  }
  /// Forgets every entry.
  void release_all() {
    for (auto& [host, k] : kept_) pool_.push_back(Idle{k.dev, k.capacity});
    kept_.clear();
  }

  /// A device buffer for any use; when the device is full, the idle pooled buffers are freed
  /// (after the device drained) and the allocation is tried again.
  void* device_alloc(std::size_t bytes) {
    try {
      return ops_.device_alloc(bytes);
    } catch (const Error&) {
      if (pool_.empty()) throw;
    }
    ops_.synchronize_all();
    free_idle();
    return ops_.device_alloc(bytes);
  }

  /// Frees the idle pooled buffers (the caller has made the device idle); returns their bytes.
  std::int64_t free_idle() {
    std::int64_t freed = 0;
    for (; !pool_.empty(); pool_.pop_back()) {
      ops_.device_free(pool_.back().dev);
      freed += static_cast<std::int64_t>(pool_.back().capacity);
    }
    return freed;
  }

 private:
  struct Kept {
    void* dev = nullptr;
    std::size_t bytes = 0, capacity = 0;
  };
  struct Idle {
    void* dev = nullptr;
    std::size_t capacity = 0;
  };
  DeviceOps& ops_;
  std::map<const char*, Kept> kept_;  ///< by host address
  std::vector<Idle> pool_;
};

}  // namespace nnvmc::batching
