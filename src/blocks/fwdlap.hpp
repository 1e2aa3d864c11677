#pragma once
/// @file fwdlap.hpp
/// Forward-Laplacian values: a quantity together with its Jacobian with respect to the 3N
/// electron coordinates and its Laplacian Σ_c ∂²/∂x_c², propagated op by op in one forward
/// pass without an autograd graph. The Jacobian is stored in one of four layouts that follow
/// which electrons a quantity depends on:
///
/// | kind   | value            | jac                   | depends on                    |
/// |--------|------------------|-----------------------|-------------------------------|
/// | local  | [B, E, *F]       | [B, E, 3, *F]         | electron offset+i only        |
/// | pair   | [B, E, E', *F]   | [B, E, E', 3, *F]     | r_i − r_j only (∂/∂r_j = −jac) |
/// | dense  | [B, E, *F]       | [B, E, 3N, *F]        | all electrons                 |
/// | global | [B, *F]          | [B, 3N, *F]           | all electrons                 |
///
/// `lap` has the shape of `value` and always holds the full Laplacian over all 3N
/// coordinates (for pair features twice the Laplacian in r_i − r_j).
#include <torch/torch.h>

#include <vector>

#include "blocks/blocks.hpp"

namespace nnvmc {

/// Which electrons a FwdLap depends on (see the table in fwdlap.hpp).
enum class Sparsity { local, pair, dense, global };

/// A value with its Jacobian and Laplacian in the 3N electron coordinates.
struct FwdLap {
  torch::Tensor value;  ///< [B, electron axes..., *F]
  torch::Tensor jac;    ///< value with a coordinate axis after the electron axes
  torch::Tensor lap;    ///< shape of value
  Sparsity kind = Sparsity::global;
  int64_t n_coords = 0;  ///< 3N
  int64_t offset = 0;    ///< index of the first electron along electron axis 1
  int64_t offset2 = 0;   ///< pair: index of the first electron along electron axis 2

  /// Number of electron axes of value (after the walker axis): 0, 1 or 2.
  int64_t electron_axes() const { return kind == Sparsity::global ? 0 : kind == Sparsity::pair ? 2 : 1; }
  /// Index of the coordinate axis in jac.
  int64_t coord_axis() const { return 1 + electron_axes(); }
  /// Σ_c ∂_c a ∂_c b over all 3N coordinates, same layout; shape of value.
  static torch::Tensor coord_dot(const FwdLap& a, const FwdLap& b);
  /// Σ_c (∂_c x)² over all 3N coordinates; shape of value.
  torch::Tensor coord_sq() const;
  /// True when value, jac and lap are held only by this object (no views, no other
  /// handles), so ops on an rvalue may update them in place.
  bool exclusive() const;
  /// The same quantity in the dense layout (from local or dense).
  FwdLap to_dense() const;
  /// The Jacobian block with respect to each electron's own coordinates:
  /// [B, E, 3, *F] (local: jac itself; dense: the diagonal blocks).
  torch::Tensor own_jac() const;
};

/// One sign [B, K] with a FwdLap log-magnitude (global, [B, K] or [B]).
struct SignedFwdLap {
  torch::Tensor sign;
  FwdLap logabs;
};

/// Forward-Laplacian implementations of the building blocks (see tensor_blocks.hpp for the
/// meaning and shapes of each op). Ops on mismatched layouts promote local → dense.
template <>
struct Blocks<FwdLap> {
  using T = FwdLap;
  using Signed = SignedFwdLap;

  static T positions(const torch::Tensor& r);
  static T sub_centres(const T& r, const torch::Tensor& centres);
  static T pair_vectors(const T& r);
  static T pair_norm(const T& ee);
  static T norm(const T& x);
  static T constant_electrons(const T& r, const torch::Tensor& c);  ///< local, zero derivatives
  static T gaussian_orbitals(const T& r, const GaussianOrbitalSpec& orb);  ///< r: positions → local
  static T tanh(const T& x);
  static T tanh(T&& x);  ///< in place when x is exclusive
  static T sigmoid(const T& x);
  static T softplus(const T& x);
  static T exp(const T& x);
  static T log(const T& x);
  static T log1p(const T& x);
  static T reciprocal(const T& x);
  static T square(const T& x);
  static T add(const T& a, const T& b);
  static T add(T&& a, const T& b);  ///< in place when a is exclusive and has b's layout
  static T mul(const T& a, const T& b);
  static T mul_const(const T& x, const torch::Tensor& c);
  static T mul_const_electrons(const T& x, const torch::Tensor& c);  ///< local or dense x
  static T add_const(const T& x, const torch::Tensor& c);
  static T linear(const torch::nn::Linear& lin, const T& x);
  static T linear_cat(const torch::nn::Linear& lin, const std::vector<T>& parts);
  static T cat(const std::vector<T>& parts);
  static T cat_electrons(const std::vector<T>& parts);
  static T reshape_features(const T& x, int64_t electron_axes, std::vector<int64_t> shape);
  static T slice_electrons(const T& x, int64_t axis, int64_t lo, int64_t hi);
  static T slice_features(const T& x, int64_t lo, int64_t hi);
  static T mean_electrons(const T& x, int64_t axis);
  static T sum_electrons(const T& x, int64_t axis);
  static T sum_features(const T& x);
  static T sum_feature_axis(const T& x, int64_t axis);
  static T pair_conv(const T& w, const T& h, const torch::Tensor& mask);  ///< pair w, local/dense h → dense
  static T sum_centres(const T& x);       ///< local or dense x
  static T pair_to_electron(const T& x);  ///< pair [B, E, E', F] → dense [B, E, F, E']
  static T add_global(const T& x, const T& g);
  static T add_global(T&& x, const T& g);  ///< in place when x is exclusive and dense
  static T envelope(const T& d, const torch::Tensor& pi, const torch::Tensor& sigma);
  static T layer_norm(const T& x);
  static T layer_norm(const T& x, double eps);
  static T electron_dot(const T& q, const T& k, double scale);  ///< local/dense inputs → dense
  static T softmax(const T& x);                                 ///< local, dense or global
  static T electron_mix(const T& a, const T& v);                ///< dense a, local/dense v → dense
  static Signed log_det(const T& x);
  static Signed signed_logsumexp(const torch::Tensor& s, const T& l);

  /// y = f(x) elementwise given f(x), f'(x), f''(x) (all shaped like x.value).
  static T elementwise(const T& x, torch::Tensor f, const torch::Tensor& df, const torch::Tensor& d2f);
  /// x · W_ᵀ (+ bias) on the last axis. @param weight [out, in] @param bias [out] or undefined
  static T affine(const T& x, const torch::Tensor& weight, const torch::Tensor& bias);
};

}  // namespace nnvmc
