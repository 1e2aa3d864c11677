#pragma once
/// @file recorded_pass.hpp
/// Per-sample gradients of log|ψ| and per-layer statistics from ONE forward and ONE backward
/// pass, for any model built from the shared building blocks (blocks/per_sample.hpp records
/// their parameter uses). Parameters used outside the blocks are detected (they still receive
/// a gradient in the backward) and handled by the vmapped fallback, so the result is exact for
/// every WaveFunction whose walkers do not interact.
#include <torch/torch.h>

#include <vector>

#include "models/wavefunction.hpp"

namespace nnvmc {

/// The per-sample gradients of one batch of walkers, kept factored where they are.
struct RecordedPass {
  /// One use of a linear map y = x·Wᵀ + b whose W and/or b are parameters: the per-sample
  /// gradients are ∂W[b] = Σ_s g[b, s]ᵀ x[b, s] and ∂b[b] = Σ_s g[b, s].
  struct Linear {
    int weight = -1;  ///< index of W [out, in] in the parameter list (−1: not handled here)
    int bias = -1;    ///< index of b [out] (−1: none or not handled here)
    torch::Tensor x;  ///< [B, S, in] inputs at the S positions (electrons, pairs, …) of each walker
    torch::Tensor g;  ///< [B, S, out] ∂log|ψ_b|/∂y at the same positions
    bool shared = false;  ///< a molecule-level map (per_sample::shared_linear): x is one [S, in]
                          ///< expanded over the walkers (batch stride 0)
  };
  std::int64_t batch = 0;            ///< B
  std::vector<Linear> linear;        ///< in recording order; a W may appear several times
  std::vector<torch::Tensor> dense;  ///< per parameter: per-sample gradient [B, numel] of its
                                     ///< other uses (undefined: none), float64
  std::vector<bool> fallback;        ///< per parameter: computed by the vmapped fallback
};

/// Runs log|ψ(r)| once with a per_sample::Recorder and one backward of Σ_b log|ψ_b|.
/// @param params the parameters, in the order of the Jacobian's columns
/// @param fallback_chunk walkers per vmapped backward for parameters used outside the blocks
/// @param r [B, N, 3]
RecordedPass record_pass(WaveFunction& wf, const SystemTensors& sys, const torch::Tensor& r,
                         const std::vector<torch::Tensor>& params, std::int64_t fallback_chunk = 16);

/// Writes the Jacobian of a recorded pass: out[b, cols(k)] = ∂log|ψ_b|/∂θ_k flattened.
/// @param out [B, P] float64 (may be a row slice of a larger buffer; overwritten)
void write_jacobian(const RecordedPass& pass, const std::vector<torch::Tensor>& params, torch::Tensor out);

/// The full per-sample gradient of parameter k from a recorded pass. @return [B, numel] float64
torch::Tensor per_sample_gradient(const RecordedPass& pass, const std::vector<torch::Tensor>& params, int k);

/// The old method: per-sample gradients of `params` only, by chunks of `chunk` walkers, each a
/// forward pass and one backward pass with c one-hot cotangents (batched_vjp).
/// Exact for any WaveFunction; c times the memory of a backward. @return [B, Σ numel] float64
torch::Tensor per_sample_log_gradients_vmap(WaveFunction& wf, const SystemTensors& sys, const torch::Tensor& r,
                                            const std::vector<torch::Tensor>& params, std::int64_t chunk);

}  // namespace nnvmc
