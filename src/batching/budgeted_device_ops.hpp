#pragma once
/// @file budgeted_device_ops.hpp
/// A DeviceOps that counts the device memory handed out through it and holds it within a
/// budget (internal to the staged GEMM backend): staging buffers, kept intermediates and
/// resident operands together. When an allocation would pass the budget it first asks its
/// owner to make room (the staged backend frees idle pooled buffers and evicts resident
/// operands that the current call does not use), then refuses with a BudgetError. Torch-free.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "batching/device_ops.hpp"
#include "core/errors.hpp"

namespace nnvmc::batching {

class BudgetedDeviceOps final : public DeviceOps {
 public:
  /// `budget_bytes` ≤ 0: no limit (memory is still counted).
  BudgetedDeviceOps(std::unique_ptr<DeviceOps> inner, std::int64_t budget_bytes)
      : inner_(std::move(inner)), budget_(std::max<std::int64_t>(budget_bytes, 0)) {}

  /// `make_room(bytes)`: called when an allocation would pass the budget by `bytes`; frees what
  /// its owner can spare (through device_free).
  void set_make_room(std::function<void(std::int64_t)> make_room) { make_room_ = std::move(make_room); }

  std::int64_t budget() const { return budget_; }
  std::int64_t in_use() const { return in_use_; }
  std::int64_t peak() const { return peak_; }

  void* device_alloc(std::size_t bytes) override {
    const auto b = static_cast<std::int64_t>(bytes);
    // a buffer larger than the whole budget fails without evicting anything first
    if (budget_ > 0 && b <= budget_ && in_use_ + b > budget_ && make_room_) make_room_(in_use_ + b - budget_);
    if (budget_ > 0 && in_use_ + b > budget_)
      throw BudgetError("staged GEMM backend: a device buffer of " + std::to_string(b) + " bytes does not fit the " +
                        "device memory budget of " + std::to_string(budget_) + " bytes (" + std::to_string(in_use_) +
                        " bytes of staging buffers and intermediates in use): give the run more memory");
    void* p = inner_->device_alloc(bytes);
    sizes_[p] = b;
    in_use_ += b;
    peak_ = std::max(peak_, in_use_);
    return p;
  }
  void device_free(void* p) override {
    const auto it = sizes_.find(p);
    if (it != sizes_.end()) {
      in_use_ -= it->second;
      sizes_.erase(it);
    }
    inner_->device_free(p);
  }
  void* host_alloc(std::size_t bytes) override { return inner_->host_alloc(bytes); }
  void host_free(void* p) override { inner_->host_free(p); }
  void copy_to_device(void* dst, const void* src, std::size_t bytes, Stream s) override {
    inner_->copy_to_device(dst, src, bytes, s);
  }
  void copy_to_host(void* dst, const void* src, std::size_t bytes, Stream s) override {
    inner_->copy_to_host(dst, src, bytes, s);
  }
  void gemm(const GemmCall& call, Stream s) override { inner_->gemm(call, s); }
  void strided_copy(const StridedCopy& call, Stream s) override { inner_->strided_copy(call, s); }
  Event record(Stream s) override { return inner_->record(s); }
  void wait(Stream s, Event e) override { inner_->wait(s, e); }
  void synchronize(Event e) override { inner_->synchronize(e); }
  void synchronize_all() override { inner_->synchronize_all(); }
  void recycle_events() override { inner_->recycle_events(); }
  /// The device's free memory, or what is left of the budget when that is less.
  std::size_t free_device_bytes() override {
    const std::size_t free = inner_->free_device_bytes();
    return budget_ > 0 ? std::min<std::size_t>(free, static_cast<std::size_t>(std::max<std::int64_t>(budget_ - in_use_, 0)))
                       : free;
  }

 private:
  std::unique_ptr<DeviceOps> inner_;
  std::int64_t budget_;
  std::function<void(std::int64_t)> make_room_;
  std::map<void*, std::int64_t> sizes_;  ///< live buffers handed out
  std::int64_t in_use_ = 0, peak_ = 0;
};

}  // namespace nnvmc::batching
