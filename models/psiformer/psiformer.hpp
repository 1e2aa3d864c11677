#pragma once
/// @file psiformer.hpp
/// Psiformer (von Glehn, Spencer, Pfau, "A Self-Attention Ansatz for Ab-initio Quantum
/// Chemistry", ICLR 2023): one-electron features only (log-rescaled electron–nucleus vectors
/// and distances, plus the spin), a bias-free embedding into the attention stream, `layers`
/// blocks of multi-head self-attention → residual → LayerNorm → tanh MLP → residual →
/// LayerNorm, K full N×N determinants with isotropic exponential envelopes, and the simple
/// electron–electron Jastrow factor exp(J) that supplies the e–e cusps.
#include <torch/torch.h>

#include "core/config.hpp"
#include "core/system.hpp"
#include "blocks/fwdlap.hpp"
#include "blocks/tensor_blocks.hpp"
#include "models/wavefunction.hpp"

namespace nnvmc {

/// One Psiformer layer on the stream x [B, N, D], D = heads·head_dim:
///   f = LN₁(x + W_o·cat_h[softmax(q_h k_hᵀ/√d_h) v_h]),  q_h, k_h, v_h bias-free projections of x;
///   x' = LN₂(f + MLP(f)),  MLP(f) = tanh(W_L·…tanh(W_1 f + b_1)… + b_L) (FermiNet's psiformer.py).
/// LN is LayerNorm over the D features with learnable scale and offset (or the identity when
/// layer_norm is false).
struct PsiformerLayerImpl : torch::nn::Module {
  /// @param width D @param heads H (D divisible by H) @param mlp_hidden hidden widths of the MLP
  PsiformerLayerImpl(int width, int heads, const std::vector<int>& mlp_hidden, bool layer_norm);
  /// The layer on any tensor-like type with `Blocks<T>` (psiformer_body.hpp).
  /// @param x [B, N, D] @return [B, N, D]
  template <class T>
  T apply(const T& x);
  torch::nn::Linear q{nullptr}, k{nullptr}, v{nullptr}, out{nullptr};
  std::vector<torch::nn::Linear> mlp;
  torch::Tensor norm_scale[2], norm_offset[2];  ///< [D] each: after attention, after the MLP
  int64_t heads;
  bool layer_norm;
};
TORCH_MODULE(PsiformerLayer);

/// The Psiformer ansatz. Parameters are float64 after construction; use ->to() for float32.
class Psiformer : public WaveFunction {
 public:
  Psiformer(const PsiformerOptions& options, const System& system);
  LogPsi forward(const torch::Tensor& r, const SystemTensors& sys) override;  ///< r [B, N, 3]
  /// [B, K, N, N], element (i, j) = orbital j of electron i times exp(J/N), so that
  /// Σ_k det = ψ (the Jastrow factor shared out over the rows, as FermiNet's networks.py does).
  torch::Tensor orbitals(const torch::Tensor& r, const SystemTensors& sys) override;
  SignedFwdLap forward_laplacian(const FwdLap& r, const SystemTensors& sys) override;
  std::string type() const override { return "psiformer"; }

  /// Output of the attention stream (the per-electron features the orbitals are projected
  /// from), over a tensor-like T. @param r `Blocks<T>::positions([B, N, 3])` @return [B, N, D]
  template <BuildingBlocks T>
  T electron_features(const T& r, const SystemTensors& sys);
  /// Orbitals electron-major [B, N, K, N] (row i = electron i), without the Jastrow factor.
  template <BuildingBlocks T>
  T orbitals_electron_major(const T& r, const SystemTensors& sys);
  /// The simple_ee Jastrow exponent J [B] (Σ_{i<j same spin} −¼α∥²/(α∥+r_ij) +
  /// Σ_{i↑ j↓} −½α⊥²/(α⊥+r_ij)); requires jastrow: simple_ee.
  template <BuildingBlocks T>
  T jastrow(const T& r);
  /// sign(ψ) [B] and log|ψ| [B] over T: signed log-sum-exp of the K determinants plus J.
  template <BuildingBlocks T>
  typename Blocks<T>::Signed log_psi(const T& r, const SystemTensors& sys);

  /// Width D of the attention stream.
  int64_t width() const { return int64_t{options_.heads} * options_.head_dim; }

 private:
  void check_shapes(int64_t electrons, const SystemTensors& sys) const;

  PsiformerOptions options_;
  int64_t n_up_, n_down_, n_atoms_;
  std::vector<std::array<int64_t, 2>> spins_;  ///< [begin, end) of each nonempty spin group
  torch::Tensor embed_;                        ///< [D, 4M + 1]: features then spin, bias-free
  std::vector<PsiformerLayer> layers_;
  std::vector<torch::nn::Linear> projections_;     ///< per spin: D → K·N, bias-free
  std::vector<torch::Tensor> env_pi_, env_sigma_;  ///< per spin: [K·N, M]
  torch::Tensor alpha_same_, alpha_opposite_;      ///< [1] Jastrow α∥, α⊥ (undefined without Jastrow)
};

}  // namespace nnvmc
