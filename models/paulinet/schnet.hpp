#pragma once
/// @file schnet.hpp
/// The graph network of PauliNet: SchNet adapted to electrons (DeepQMC's ElectronicSchNet,
/// version 2). Electron embeddings start from one learned vector per spin (one shared vector
/// when n↑ = n↓) and are refined in L interaction rounds
///   x_i ← x_i + g_same(Σ_{j≠i, same spin} w_same(e_ij) ⊙ h(x_j))
///             + g_anti(Σ_{j, other spin} w_anti(e_ij) ⊙ h(x_j))
///             + g_nuc(Σ_I w_nuc(e_iI) ⊙ Y_I),
/// with e(d) = d² e^{−d} exp(−(d − μ_k)²/σ_k²) Gaussian distance features (μ_k = c q_k²,
/// σ_k = (1 + c q_k)/7, q_k evenly spaced in (0, 1), cutoff c) that are smooth at d = 0, so the
/// network adds no cusp. Template bodies over Blocks<T> are in schnet_body.hpp.
#include <torch/torch.h>

#include <array>
#include <vector>

#include "blocks/blocks.hpp"
#include "core/config.hpp"
#include "models/system_tensors.hpp"

namespace nnvmc {

/// Widths start^(1−k/n)·end^(k/n), k = 0 … n, rounded (DeepQMC's logarithmic progression).
std::vector<int> log_widths(int start, int end, int layers);

/// A fully connected network with shifted-softplus activations ssp(x) = log(1 + eˣ) − log 2
/// between its layers; all layers have biases except the last unless `last_bias`.
struct MlpImpl : torch::nn::Module {
  /// @param widths input, hidden…, output widths
  MlpImpl(const std::vector<int>& widths, bool last_bias);
  /// @param x [..., widths.front()] @return [..., widths.back()]
  template <class T>
  T apply(const T& x) const;
  std::vector<torch::nn::Linear> layers;
};
TORCH_MODULE(Mlp);

/// One interaction round.
struct SchNetLayerImpl : torch::nn::Module {
  SchNetLayerImpl(int features, int kernel, int embedding);
  Mlp w_same{nullptr}, w_anti{nullptr}, w_nuc{nullptr};  ///< filters: features → kernel
  torch::nn::Linear h{nullptr};                           ///< embedding → kernel (no bias)
  torch::nn::Linear g_same{nullptr}, g_anti{nullptr}, g_nuc{nullptr};  ///< kernel → embedding (no bias)
};
TORCH_MODULE(SchNetLayer);

/// The electronic SchNet. Parameters: electron embeddings X [1 or 2, D], nuclear embeddings
/// Y [M, K] and the layers.
struct SchNetImpl : torch::nn::Module {
  SchNetImpl(int64_t n_up, int64_t n_down, int64_t n_atoms, const PaulinetOptions& options);
  /// Electron embeddings x^(L). @param r positions (Blocks<T>::positions) @param d_ee pair
  /// distances [B, N, N, 1] (Blocks<T>::pair_norm) @return [B, N, D]
  template <class T>
  T apply(const T& r, const T& d_ee, const SystemTensors& sys) const;
  /// e(d) for distances d [..., 1] → [..., features].
  template <class T>
  T distance_features(const T& d) const;

  int64_t n_up, n_down;
  torch::Tensor electron_embedding;  ///< X [1 or 2, D]: row 0 spin up, the last row spin down
  torch::Tensor nuclear_embedding;   ///< Y [M, K]
  std::vector<SchNetLayer> layers;
  torch::Tensor mu, inv_sigma2;      ///< distance-feature centres and 1/σ² [features] (buffers, not parameters)
};
TORCH_MODULE(SchNet);

}  // namespace nnvmc
