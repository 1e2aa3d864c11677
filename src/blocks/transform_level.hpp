#pragma once
/// @file transform_level.hpp
/// One functorch transform level (vmap, jvp or grad) on the thread's transform stack: the C++
/// layer under torch.func, used by the jvp Laplacian (vmap ∘ jvp ∘ grad) and by batched
/// vector–Jacobian products (vmap over the autograd engine).
#include <ATen/functorch/BatchedTensorImpl.h>
#include <ATen/functorch/DynamicLayer.h>
#include <ATen/functorch/TensorWrapper.h>
#include <torch/torch.h>

#include <optional>

namespace nnvmc {

/// A transform level pushed for the lifetime of the object; popped on scope exit, also when
/// the code inside throws. Not copyable.
class TransformLevel {
 public:
  TransformLevel(at::functorch::TransformType type, std::optional<c10::SymInt> batch,
                 std::optional<at::functorch::RandomnessType> randomness, std::optional<bool> prev_grad,
                 std::optional<bool> prev_fwd_grad)
      : level_(at::functorch::initAndPushDynamicLayer(type, std::move(batch), randomness, prev_grad, prev_fwd_grad)) {}
  /// A vmap level of `size` (random ops inside are an error).
  static TransformLevel vmap(int64_t size) {
    return {at::functorch::TransformType::Vmap, c10::SymInt(size), at::functorch::RandomnessType::Error,
            std::nullopt, std::nullopt};
  }
  ~TransformLevel() { at::functorch::popDynamicLayerAndDeleteMetadata(); }
  TransformLevel(const TransformLevel&) = delete;
  TransformLevel& operator=(const TransformLevel&) = delete;
  int64_t level() const { return level_; }
  /// The tensor a grad or jvp transform returns at this level: its wrapper removed.
  torch::Tensor unwrap(const torch::Tensor& t) const {
    auto* w = at::functorch::maybeGetTensorWrapper(t);
    return (w != nullptr && w->level() == level_) ? w->value() : t;
  }
  /// `t` batched along `dim` at this vmap level (functorch's BatchedTensor; at::_add_batch_dim
  /// would make the legacy one, which lacks most batching rules and loops over the batch).
  torch::Tensor batch(const torch::Tensor& t, int64_t dim) const { return at::functorch::addBatchDim(t, dim, level_); }
  /// What this vmap level returns: the batch dimension of `t` moved to the front, or `t`
  /// broadcast along a new front dimension of `size` when it does not depend on the batch.
  torch::Tensor unbatch(const torch::Tensor& t, int64_t size) const {
    auto* b = at::functorch::maybeGetBatchedImpl(t);
    if (b == nullptr || b->level() < level_) {
      auto sizes = t.sizes().vec();
      sizes.insert(sizes.begin(), size);
      return t.unsqueeze(0).expand(sizes);
    }
    return b->value().movedim(b->bdim(), 0);
  }

 private:
  int64_t level_;
};

}  // namespace nnvmc
