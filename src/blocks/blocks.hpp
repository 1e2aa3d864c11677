#pragma once
/// @file blocks.hpp
/// The building blocks every ansatz body is written over, below models and hamiltonian.
///
/// An ansatz written once as a template over a tensor-like type T calls only
/// `Blocks<T>::op(...)`. Two specialisations exist:
/// - `Blocks<torch::Tensor>` (tensor_blocks.hpp): plain tensors, differentiated by autograd
///   (WaveFunction::forward, the jvp/reverse/hutchinson Laplacians, parameter gradients);
/// - `Blocks<FwdLap>` (fwdlap.hpp): value, Jacobian and Laplacian in the 3N electron
///   coordinates carried through one forward pass (the `forward` Laplacian).
/// The concept `BuildingBlocks<T>` lists every op; both specialisations are checked against it
/// at compile time (blocks_check.cpp), so an op missing from one of them is a compile error,
/// and ansatz templates are constrained by it.
///
/// Shapes: electron features [B, E, *F], pair features [B, E, E', *F], global features
/// [B, *F]; "features" are the trailing axes.
#include <torch/torch.h>

#include <concepts>
#include <vector>

#include "blocks/gaussian_orbitals.hpp"

namespace nnvmc {

/// sign(ψ) and log|ψ| per walker.
struct LogPsi {
  torch::Tensor sign;    ///< [B], ±1
  torch::Tensor logabs;  ///< [B], log|ψ|
};

/// Building-block hook; specialised for torch::Tensor and FwdLap.
template <class T>
struct Blocks;

/// ε of the layer normalisation of every Blocks<T> implementation.
inline constexpr double kLayerNormEps = 1e-5;

/// Every op an ansatz may use, with the argument kinds it takes. `x`, `y` are T values;
/// `c` a constant tensor (parameters enter as constants: derivatives are in electron
/// coordinates only); `lin` a linear layer; `orb` Gaussian orbitals (gaussian_orbitals.hpp).
template <class T>
concept BuildingBlocks = requires(const T& x, const T& y, const std::vector<T>& parts,
                                  const torch::Tensor& c, const torch::nn::Linear& lin,
                                  std::vector<int64_t> shape, int64_t i, double s,
                                  const GaussianOrbitalSpec& orb) {
  typename Blocks<T>::Signed;
  { Blocks<T>::positions(c) } -> std::same_as<T>;
  { Blocks<T>::sub_centres(x, c) } -> std::same_as<T>;
  { Blocks<T>::pair_vectors(x) } -> std::same_as<T>;
  { Blocks<T>::pair_norm(x) } -> std::same_as<T>;
  { Blocks<T>::norm(x) } -> std::same_as<T>;
  { Blocks<T>::constant_electrons(x, c) } -> std::same_as<T>;
  { Blocks<T>::gaussian_orbitals(x, orb) } -> std::same_as<T>;
  { Blocks<T>::tanh(x) } -> std::same_as<T>;
  { Blocks<T>::sigmoid(x) } -> std::same_as<T>;
  { Blocks<T>::softplus(x) } -> std::same_as<T>;
  { Blocks<T>::exp(x) } -> std::same_as<T>;
  { Blocks<T>::log(x) } -> std::same_as<T>;
  { Blocks<T>::log1p(x) } -> std::same_as<T>;
  { Blocks<T>::square(x) } -> std::same_as<T>;
  { Blocks<T>::reciprocal(x) } -> std::same_as<T>;
  { Blocks<T>::add(x, y) } -> std::same_as<T>;
  { Blocks<T>::mul(x, y) } -> std::same_as<T>;
  { Blocks<T>::mul_const(x, c) } -> std::same_as<T>;
  { Blocks<T>::mul_const_electrons(x, c) } -> std::same_as<T>;
  { Blocks<T>::add_const(x, c) } -> std::same_as<T>;
  { Blocks<T>::linear(lin, x) } -> std::same_as<T>;
  { Blocks<T>::affine(x, c, c) } -> std::same_as<T>;
  { Blocks<T>::linear_cat(lin, parts) } -> std::same_as<T>;
  { Blocks<T>::cat(parts) } -> std::same_as<T>;
  { Blocks<T>::cat_electrons(parts) } -> std::same_as<T>;
  { Blocks<T>::reshape_features(x, i, shape) } -> std::same_as<T>;
  { Blocks<T>::slice_electrons(x, i, i, i) } -> std::same_as<T>;
  { Blocks<T>::slice_features(x, i, i) } -> std::same_as<T>;
  { Blocks<T>::mean_electrons(x, i) } -> std::same_as<T>;
  { Blocks<T>::sum_electrons(x, i) } -> std::same_as<T>;
  { Blocks<T>::sum_features(x) } -> std::same_as<T>;
  { Blocks<T>::sum_feature_axis(x, i) } -> std::same_as<T>;
  { Blocks<T>::pair_conv(x, y, c) } -> std::same_as<T>;
  { Blocks<T>::sum_centres(x) } -> std::same_as<T>;
  { Blocks<T>::pair_to_electron(x) } -> std::same_as<T>;
  { Blocks<T>::add_global(x, y) } -> std::same_as<T>;
  { Blocks<T>::envelope(x, c, c) } -> std::same_as<T>;
  { Blocks<T>::layer_norm(x) } -> std::same_as<T>;
  { Blocks<T>::layer_norm(x, s) } -> std::same_as<T>;
  { Blocks<T>::electron_dot(x, y, s) } -> std::same_as<T>;
  { Blocks<T>::softmax(x) } -> std::same_as<T>;
  { Blocks<T>::electron_mix(x, y) } -> std::same_as<T>;
  { Blocks<T>::log_det(x) } -> std::same_as<typename Blocks<T>::Signed>;
  { Blocks<T>::signed_logsumexp(c, x) } -> std::same_as<typename Blocks<T>::Signed>;
};

/// sign and log|det| of square matrices from their pivoted LU factorisation
/// (log|det| = Σ_i log|U_ii|), differentiable to any order through libtorch's LU derivative.
/// Use this, not torch::linalg_slogdet, in ansätze: in float32 the second derivatives of
/// linalg_slogdet (reverse-over-reverse and forward-over-reverse) are wrong by O(1) on
/// well-conditioned orbital matrices with small determinants (CH4, FermiNet: Hessian diagonal
/// entries off by up to 40 %, cond ≈ 200, |det| ≈ 1e-6), while the LU route agrees with float64
/// to float32 rounding (bench/laplacian_precision.cpp measures both). Uses
/// torch::linalg_lu_factor_ex: an exactly singular matrix gives sign 0 and log|det| = −inf
/// (no exception, no device synchronisation).
/// @param a [..., n, n] @return sign [...] (detached), log|det| [...]
LogPsi lu_slogdet(const torch::Tensor& a);

/// sign and log|det| from a factorisation (lu, pivots) = torch::linalg_lu_factor_ex(a).
/// @param lu [..., n, n] @param pivots [..., n] (1-based) @return sign [...] (detached), log|det| [...]
LogPsi slogdet_from_lu(const torch::Tensor& lu, const torch::Tensor& pivots);

/// Stable log|Σ_k s_k exp(l_k)| and its sign over the last axis (−inf and sign 0 when every
/// l_k is −inf).
/// @param sign [..., K] @param logabs [..., K] @return sign [...], logabs [...]
LogPsi signed_logsumexp(const torch::Tensor& sign, const torch::Tensor& logabs);

}  // namespace nnvmc
