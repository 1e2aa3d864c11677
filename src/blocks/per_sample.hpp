#pragma once
/// @file per_sample.hpp
/// Recording of parameter uses in `Blocks<torch::Tensor>` for per-sample gradients and
/// layer statistics (KFAC) from ONE forward and ONE backward pass.
///
/// While a `per_sample::Recorder` is alive on a thread, the autograd building blocks route
/// their parameters through it:
/// - every linear map y = x·Wᵀ + b (`linear`, `linear_cat`, `affine`) is computed with W and
///   b detached; the recorder keeps the input x and the output y, so one backward of
///   Σ_b log|ψ_b| gives ∂/∂y and the per-sample weight gradient is the contraction
///   Σ_s g[b, s, :]ᵀ x[b, s, :] over the electron/pair positions s of walker b;
/// - every other tensor argument that requires grad (a "constant" of the ops, e.g. envelope
///   π/σ, a layer-norm scale passed to mul_const) is replaced by a per-sample replica
///   c.detach() + δ with δ [B, *c.shape] zeros that require grad; ∂/∂δ is the per-sample
///   gradient of c;
/// - a linear map of walker-independent inputs (`shared_linear`: a hypernetwork's layers, run
///   once per molecule) is computed with W and b detached too; the recorder keeps x [*, in] and
///   y [*, out] without a walker axis. The per-sample gradients of y come from pulling the
///   walkers' cotangents back through the molecule-level graph (train/recorded_pass.cpp), and
///   ∂W[b] = Σ_s g[b, s]ᵀ x[s] is then written like any other linear use's.
/// Parameters therefore leave the autograd graph of log|ψ| wherever they enter a building
/// block; a parameter that still receives a gradient from the backward is used outside the
/// blocks and is handled by a fallback (train/per_sample_gradients.cpp). With no recorder the
/// ops are unchanged (one thread-local pointer test each).
#include <torch/torch.h>

#include <unordered_map>
#include <vector>

namespace nnvmc::per_sample {

/// One use of a linear map y = x·Wᵀ + b.
struct LinearUse {
  torch::Tensor weight;  ///< W [out, in] as passed to the op (a parameter or computed from one)
  torch::Tensor bias;    ///< b [out] as passed, or undefined
  torch::Tensor x;       ///< input [B, *, in] (detached)
  torch::Tensor y;       ///< output [B, *, out]; the backward is taken with respect to it
};

/// One constant argument replaced by per-sample replicas.
struct ConstantUse {
  torch::Tensor constant;  ///< c as passed to the op (a parameter or computed from one)
  torch::Tensor delta;     ///< δ [B, *c.shape], zeros, requires grad
};

/// Records the parameter uses of the building blocks on this thread while alive (RAII;
/// recorders nest, the innermost is active). Not copyable.
class Recorder {
 public:
  Recorder();
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  /// y = x·Wᵀ + b with W, b detached; recorded. @param x [B, *, in] @return y [B, *, out]
  torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias);
  /// y = x·Wᵀ + b with W, b detached, x walker-independent; recorded as a shared use.
  /// @param x [*, in] @return y [*, out]
  torch::Tensor shared_linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias);
  /// The per-sample replica of c for a batch of `batch` walkers, viewed as
  /// [B, 1, …, 1, *c.shape] with `dims` axes so that it broadcasts like c against a [B, …]
  /// tensor of `dims` axes. One replica per distinct c (repeated uses share it).
  torch::Tensor constant(const torch::Tensor& c, int64_t batch, int64_t dims);

  const std::vector<LinearUse>& linear_uses() const { return linear_; }
  const std::vector<ConstantUse>& constant_uses() const { return constants_; }
  /// Uses of shared_linear: x [*, in] and y [*, out] carry no walker axis.
  const std::vector<LinearUse>& shared_linear_uses() const { return shared_; }

 private:
  std::vector<LinearUse> linear_;
  std::vector<ConstantUse> constants_;
  std::vector<LinearUse> shared_;
  std::unordered_map<const void*, size_t> constant_index_;  ///< TensorImpl* → constants_ entry
  Recorder* previous_;
};

/// The recorder active on this thread, or nullptr.
Recorder* active();

/// No recorder is active on this thread while alive (RAII; e.g. for a plain pass inside a
/// recording).
class Suspend {
 public:
  Suspend();
  ~Suspend();
  Suspend(const Suspend&) = delete;
  Suspend& operator=(const Suspend&) = delete;

 private:
  Recorder* previous_;
};

/// x·Wᵀ + b, recorded when a recorder is active and W or b requires grad.
/// @param x [B, *, in] @param weight [out, in] @param bias [out] or undefined @return [B, *, out]
inline torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  if (Recorder* r = active();
      r != nullptr && (weight.requires_grad() || (bias.defined() && bias.requires_grad())))
    return r->linear(x, weight, bias);
  return torch::nn::functional::linear(x, weight, bias);
}

/// x·Wᵀ + b for an x that does not depend on the walkers (molecule-level: a hypernetwork's
/// layers), recorded as a shared use when a recorder is active and W is a parameter (a leaf
/// that requires grad; b undefined or a leaf). Otherwise a plain linear map: a W computed from
/// parameters keeps its graph and is pulled back with the rest of the molecule-level graph.
/// @param x [*, in] @param weight [out, in] @param bias [out] or undefined @return [*, out]
inline torch::Tensor shared_linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  if (Recorder* r = active(); r != nullptr && weight.is_leaf() && weight.requires_grad() &&
                              (!bias.defined() || bias.is_leaf()))
    return r->shared_linear(x, weight, bias);
  return torch::nn::functional::linear(x, weight, bias);
}

/// shared_linear with a module's weight and bias.
inline torch::Tensor shared_linear(const torch::nn::Linear& lin, const torch::Tensor& x) {
  return shared_linear(x, lin->weight, lin->bias);
}

/// The constant c as an op sees it: c itself, or (recorder active, c requires grad) its
/// per-sample replica for `batch` walkers, broadcasting like c against a tensor of `dims` axes
/// (Recorder::constant).
inline torch::Tensor constant(const torch::Tensor& c, int64_t batch, int64_t dims) {
  if (Recorder* r = active(); r != nullptr && c.defined() && c.requires_grad()) return r->constant(c, batch, dims);
  return c;
}

/// As above, broadcasting against `like` [B, …].
inline torch::Tensor constant(const torch::Tensor& c, const torch::Tensor& like) {
  return constant(c, like.size(0), like.dim());
}

}  // namespace nnvmc::per_sample
