#pragma once
/// @file tensor_blocks.hpp
/// `Blocks<torch::Tensor>`: the building blocks of ansätze evaluated on plain tensors (the
/// autograd path of WaveFunction::forward). `Blocks<FwdLap>` (fwdlap.hpp) implements the same
/// ops for the forward Laplacian, so an ansatz written against `Blocks<T>` gets both. Shapes: electron features [B, E, *F],
/// pair features [B, E, E', *F], global features [B, *F]; "features" are trailing axes.
///
/// Every parameter (linear layers, and any tensor argument `c` that requires grad) enters
/// through `per_sample::linear` / `per_sample::constant` (per_sample.hpp), so that per-sample
/// gradients and KFAC statistics come from one backward pass for every model. A new op that
/// takes a tensor argument must pass it through `per_sample::constant` the same way (if it
/// does not, its parameters are still exact, through the slower fallback).
#include <torch/torch.h>

#include <array>
#include <vector>

#include "blocks/blocks.hpp"
#include "blocks/per_sample.hpp"

namespace nnvmc {

template <>
struct Blocks<torch::Tensor> {
  using T = torch::Tensor;
  using Signed = LogPsi;  ///< sign [B] and log|ψ| [B]

  /// Electron positions as the input of an ansatz. @param r [B, N, 3]
  static T positions(const torch::Tensor& r) { return r; }
  /// r_i − R_m. @param r [B, N, 3] @param centres [M, 3] @return [B, N, M, 3]
  static T sub_centres(const T& r, const torch::Tensor& centres) { return r.unsqueeze(2) - per_sample::constant(centres, r.unsqueeze(2)); }
  /// r_i − r_j. @param r [B, N, 3] @return [B, N, N, 3]
  static T pair_vectors(const T& r) { return r.unsqueeze(2) - r.unsqueeze(1); }
  /// |r_i − r_j| with a zero (and differentiable) diagonal. @param ee [B, N, N, 3] @return [B, N, N, 1]
  static T pair_norm(const T& ee) {
    const auto eye = torch::eye(ee.size(1), ee.options()).unsqueeze(-1);  // [N, N, 1]
    return (ee + eye).norm(2, -1, /*keepdim=*/true) * (1 - eye);
  }
  /// Constant electron features c broadcast over the walkers of r (no dependence on r).
  /// @param r [B, E, 3] positions @param c [E, *F] @return [B, E, *F]
  static T constant_electrons(const T& r, const torch::Tensor& c) {
    std::vector<int64_t> s{r.size(0)};
    s.insert(s.end(), c.sizes().begin(), c.sizes().end());
    return per_sample::constant(c, r).expand(s);  // c [N, D], or its per-sample replica [B, N, D]
  }
  /// Gaussian (cusp-corrected) orbitals on electron positions (gaussian_orbitals.hpp).
  /// @param r [B, E, 3] @return [B, E, O]
  static T gaussian_orbitals(const T& r, const GaussianOrbitalSpec& orb) { return gaussian_orbitals_tensor(r, orb); }
  /// Euclidean norm over the last axis, kept as size 1.
  static T norm(const T& x) { return x.norm(2, -1, /*keepdim=*/true); }
  static T tanh(const T& x) { return torch::tanh(x); }
  static T sigmoid(const T& x) { return torch::sigmoid(x); }
  static T exp(const T& x) { return torch::exp(x); }
  /// log(1 + eˣ) (libtorch's softplus has forward-mode derivatives of its backward).
  static T softplus(const T& x) { return torch::softplus(x); }
  static T log(const T& x) { return torch::log(x); }
  static T log1p(const T& x) { return torch::log1p(x); }
  static T reciprocal(const T& x) { return torch::reciprocal(x); }
  static T square(const T& x) { return x.square(); }
  static T add(const T& a, const T& b) { return a + b; }
  static T mul(const T& a, const T& b) { return a * b; }
  /// x · c with a constant c broadcast over the trailing (feature) axes.
  static T mul_const(const T& x, const torch::Tensor& c) { return x * per_sample::constant(c, x); }
  /// x[b, i, ...] · c[i, ...]: a constant per electron (e.g. a spin-dependent gate).
  /// @param x electron features [B, E, *F] @param c [E, *F]
  static T mul_const_electrons(const T& x, const torch::Tensor& c) { return x * per_sample::constant(c, x); }
  /// x + c with a constant c broadcast over the trailing axes (e.g. [E, F] per electron).
  static T add_const(const T& x, const torch::Tensor& c) { return x + per_sample::constant(c, x); }
  /// x · weightᵀ (+ bias) on the last axis. @param weight [out, in] @param bias [out] or undefined
  static T affine(const T& x, const torch::Tensor& weight, const torch::Tensor& bias) {
    return per_sample::linear(x, weight, bias);
  }
  static T linear(const torch::nn::Linear& lin, const T& x) { return per_sample::linear(x, lin->weight, lin->bias); }
  /// lin(cat(parts, -1)); the concatenation is a detail of this implementation.
  static T linear_cat(const torch::nn::Linear& lin, const std::vector<T>& parts) {
    return per_sample::linear(torch::cat(parts, -1), lin->weight, lin->bias);
  }
  /// Concatenation over the last (feature) axis.
  static T cat(const std::vector<T>& parts) { return torch::cat(parts, -1); }
  /// Concatenation over the electron axis 1 (contiguous electron ranges in order).
  static T cat_electrons(const std::vector<T>& parts) { return torch::cat(parts, 1); }
  /// Reshapes the feature axes that follow `electron_axes` electron axes.
  static T reshape_features(const T& x, int64_t electron_axes, std::vector<int64_t> shape) {
    std::vector<int64_t> s(x.sizes().begin(), x.sizes().begin() + 1 + electron_axes);
    s.insert(s.end(), shape.begin(), shape.end());
    return x.reshape(s);
  }
  /// Electrons [lo, hi) along electron axis `axis` (1 or 2).
  static T slice_electrons(const T& x, int64_t axis, int64_t lo, int64_t hi) {
    return x.slice(axis, lo, hi);
  }
  /// Features [lo, hi) of the last axis.
  static T slice_features(const T& x, int64_t lo, int64_t hi) { return x.slice(-1, lo, hi); }
  static T mean_electrons(const T& x, int64_t axis) { return x.mean(axis); }
  static T sum_electrons(const T& x, int64_t axis) { return x.sum(axis); }
  /// Sum over the last (feature) axis, dropped.
  static T sum_features(const T& x) { return x.sum(-1); }
  /// Sum over the feature axis `axis` (negative, counted from the end), dropped.
  static T sum_feature_axis(const T& x, int64_t axis) { return x.sum(axis); }
  /// Continuous-filter convolution out[b, i, f] = Σ_j mask[i, j] w[b, i, j, f] h[b, j, f]
  /// (SchNet). @param w [B, E, E', F] pair filters @param h [B, E', F] @param mask [E, E'] constant
  /// 0/1 pair selection, or undefined for all pairs @return [B, E, F]
  static T pair_conv(const T& w, const T& h, const torch::Tensor& mask) {
    // A broadcast product summed over j: several times faster than einsum's batched
    // matrix-vector products for few electrons (bench: [256, 5, 5, 64], 3.6 vs 13.6 ms).
    const auto wm = mask.defined() ? w * mask.unsqueeze(-1) : w;
    return (wm * h.unsqueeze(1)).sum(2);
  }
  /// Σ_m over the centre axis of electron–centre features. @param x [B, E, M, *F] @return [B, E, *F]
  static T sum_centres(const T& x) { return x.sum(2); }
  /// Pair features as features of their first electron, the partner electron last:
  /// out[b, i, f, j] = x[b, i, j, f]. @param x [B, E, E', F] @return [B, E, F, E']
  static T pair_to_electron(const T& x) { return x.movedim(2, -1); }
  /// Layer normalisation over the last (feature) axis, without affine parameters:
  /// (x − mean) / sqrt(var + 1e-5) with the biased variance (as torch::layer_norm).
  /// Written in elementary ops: libtorch's fused layer_norm has no forward-mode derivative of
  /// its backward, which the jvp Laplacian (forward over reverse) needs.
  static T layer_norm(const T& x) { return layer_norm(x, kLayerNormEps); }
  /// The same with ε = eps (e.g. 1e-2 or 1.0, as oneqmc's parameter-free layer norms).
  static T layer_norm(const T& x, double eps) {
    const auto c = x - x.mean(-1, true);
    return c * torch::rsqrt(c.square().mean(-1, true) + eps);
  }
  /// Attention scores s[b, i, j] = scale · Σ_f q[b, i, f] k[b, j, f].
  /// @param q [B, E, F] @param k [B, E', F] @return [B, E, E'] (electron j as the feature axis)
  static T electron_dot(const T& q, const T& k, double scale) { return torch::matmul(q, k.transpose(1, 2)) * scale; }
  /// Softmax over the last (feature) axis, in elementary ops (libtorch's fused softmax backward
  /// has no forward-mode derivative either); the max shift is a constant for the derivatives.
  static T softmax(const T& x) {
    const auto e = torch::exp(x - std::get<0>(x.detach().max(-1, true)));
    return e / e.sum(-1, true);
  }
  /// out[b, i, f] = Σ_j a[b, i, j] v[b, j, f]. @param a [B, E, E'] @param v [B, E', F] @return [B, E, F]
  static T electron_mix(const T& a, const T& v) { return torch::matmul(a, v); }
  /// x[b, i, ...] + g[b, ...] (global features broadcast over electrons).
  static T add_global(const T& x, const T& g) { return x + g.unsqueeze(1); }
  /// Σ_m π_om exp(−|σ_om| d_im). @param d [B, E, M] @param pi,sigma [O, M] @return [B, E, O]
  /// Laid out [B, E, M, O] in memory and summed over M: libtorch's sum over a short innermost
  /// axis is slow ([512, 2, 32, 2] over M = 2: 0.87 ms, against 0.044 ms over an outer M).
  /// The transposed constants are made contiguous: elementwise ops lay their output out like
  /// their inputs, so a transposed view would bring back the slow layout.
  static T envelope(const T& d, const torch::Tensor& pi, const torch::Tensor& sigma) {
    const auto d4 = d.unsqueeze(-1);  // [B, E, M, 1]
    const auto pi_mo = per_sample::constant(pi, d4).transpose(-1, -2).contiguous();                   // [.., M, O]
    const auto sigma_mo = torch::abs(per_sample::constant(sigma, d4).transpose(-1, -2).contiguous());  // [.., M, O]
    return (pi_mo * torch::exp(-d4 * sigma_mo)).sum(-2);
  }
  /// sign and log|det| of K matrices given electron-major. @param x [B, E, K, E] (row i =
  /// electron i) @return sign [B, K], log|det| [B, K]
  static Signed log_det(const T& x) {
    return lu_slogdet(x.permute({0, 2, 1, 3}));
  }
  /// log|Σ_k s_k exp(l_k)| over the last axis. @param s, l [B, K] @return [B]
  static Signed signed_logsumexp(const torch::Tensor& s, const T& l) {
    return nnvmc::signed_logsumexp(s, l);
  }
};

}  // namespace nnvmc
