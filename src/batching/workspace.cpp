/// Exact-size buffer reuse for the executor (workspace.hpp).
#include "batching/workspace.hpp"

#include <ATen/ATen.h>

namespace nnvmc::batching {

Workspace::Key Workspace::key_of(std::int64_t bytes, const at::TensorOptions& options) {
  return {bytes, int(c10::typeMetaToScalarType(options.dtype())), int(options.device().type()),
          int(options.device().index())};
}

at::Tensor Workspace::take(at::IntArrayRef shape, const at::TensorOptions& options, std::int64_t capacity,
                           std::int64_t limit) {
  std::int64_t numel = 1;
  for (auto s : shape) numel *= s;
  const std::int64_t room = std::max(numel, capacity);
  const std::int64_t bytes = room * std::int64_t(options.dtype().itemsize());
  const Key key = key_of(bytes, options);
  std::lock_guard<std::mutex> lock(mu_);
  at::Tensor buf;
  if (auto it = idle_.find(key); it != idle_.end()) {
    buf = std::move(it->second.buf);
    idle_.erase(it);
    idle_bytes_ -= bytes;
  } else {
    while (!idle_.empty() && held_ + bytes > limit) {  // least recently used first
      auto lru = idle_.begin();
      for (auto i = idle_.begin(); i != idle_.end(); ++i)
        if (i->second.last_used < lru->second.last_used) lru = i;
      held_ -= std::get<0>(lru->first);
      idle_bytes_ -= std::get<0>(lru->first);
      idle_.erase(lru);
    }
    buf = at::empty({std::max<std::int64_t>(room, 1)}, options);
    held_ += bytes;
    created_ += 1;
  }
  busy_[buf.storage().data()] = {key, buf};  // the storage: zero-element views have no data_ptr
  return buf.narrow(0, 0, numel).view(shape);
}

void Workspace::give(const at::Tensor& t) {
  if (!t.defined()) return;
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = busy_.find(t.storage().data());
  if (it == busy_.end()) return;
  const Key key = it->second.first;
  idle_bytes_ += std::get<0>(key);
  idle_.emplace(key, Idle{std::move(it->second.second), ++clock_});
  busy_.erase(it);
}

void Workspace::release() {
  std::lock_guard<std::mutex> lock(mu_);
  idle_.clear();
  held_ -= idle_bytes_;
  idle_bytes_ = 0;
}

std::int64_t Workspace::held_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return held_;
}
std::int64_t Workspace::idle_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return idle_bytes_;
}
std::int64_t Workspace::created() const {
  std::lock_guard<std::mutex> lock(mu_);
  return created_;
}

}  // namespace nnvmc::batching
