#pragma once
/// @file wavefunction.hpp
/// The WaveFunction contract shared by every ansatz (see docs/design.md).
#include <torch/torch.h>

#include <string>

#include "core/system.hpp"

namespace nnvmc {

/// sign(ψ) and log|ψ| per walker.
struct LogPsi {
  torch::Tensor sign;    ///< [B], ±1
  torch::Tensor logabs;  ///< [B], log|ψ|
};

/// A many-electron wavefunction ψ(r). Positions r are [B, N, 3] (bohr), electrons ordered
/// spin-up first. Must be differentiable by libtorch autograd in r (twice) and in parameters.
class WaveFunction : public torch::nn::Module {
 public:
  ~WaveFunction() override = default;
  /// @param r [B, N, 3] @return sign [B], log|ψ| [B]
  virtual LogPsi forward(const torch::Tensor& r) = 0;
  /// Orbital matrices for HF pretraining: [B, K, N, N] (K determinants), element (i, j) =
  /// orbital j at electron i. @throws Error if the ansatz has no orbitals.
  virtual torch::Tensor orbitals(const torch::Tensor& r);
  /// Registry key of the ansatz, e.g. "ferminet".
  virtual std::string type() const = 0;
};

/// Building-block hook. An ansatz written once as a template over a tensor-like type T calls
/// only `Blocks<T>::op(...)` (linear, tanh, means over electrons, envelope, log-determinant,
/// ...). `Blocks<torch::Tensor>` (models/ferminet/tensor_blocks.hpp) evaluates with autograd;
/// `Blocks<FwdLap>` (hamiltonian/forward_laplacian/) carries value, Jacobian and Laplacian
/// in one forward pass. Specialisations define every op the ansätze use.
template <class T>
struct Blocks;

/// ε of the layer normalisation of every Blocks<T> implementation.
inline constexpr double kLayerNormEps = 1e-5;

/// Nuclear positions [M, 3] and charges [M] of a system as tensors.
struct NucleiTensors {
  torch::Tensor positions;  ///< [M, 3]
  torch::Tensor charges;    ///< [M]
};
NucleiTensors nuclei_tensors(const System& system, torch::TensorOptions options);

/// sign and log|det| of square matrices from their pivoted LU factorisation
/// (log|det| = Σ_i log|U_ii|), differentiable to any order through libtorch's LU derivative.
/// Use this, not torch::linalg_slogdet, in ansätze: in float32 the second derivatives of
/// linalg_slogdet (reverse-over-reverse and forward-over-reverse) are wrong by O(1) on
/// well-conditioned orbital matrices with small determinants (CH4, FermiNet: Hessian diagonal
/// entries off by up to 40 %, cond ≈ 200, |det| ≈ 1e-6), while the LU route agrees with float64
/// to float32 rounding (bench/laplacian_precision.cpp measures both).
/// @param a [..., n, n] @return sign [...] (detached), log|det| [...]
LogPsi lu_slogdet(const torch::Tensor& a);

/// sign and log|det| from a factorisation (lu, pivots) = torch::linalg_lu_factor(a).
/// @param lu [..., n, n] @param pivots [..., n] (1-based) @return sign [...] (detached), log|det| [...]
LogPsi slogdet_from_lu(const torch::Tensor& lu, const torch::Tensor& pivots);

/// Stable log|Σ_k s_k exp(l_k)| and its sign over the last axis.
/// @param sign [..., K] @param logabs [..., K] @return sign [...], logabs [...]
LogPsi signed_logsumexp(const torch::Tensor& sign, const torch::Tensor& logabs);

}  // namespace nnvmc
