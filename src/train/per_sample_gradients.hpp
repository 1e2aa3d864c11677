#pragma once
/// @file per_sample_gradients.hpp
/// Per-walker gradients of log|ψ| with respect to all parameters (the B × P Jacobian) and
/// flat views of a module's parameters, for the natural-gradient optimizers.
#include <torch/torch.h>

#include <vector>

#include "models/wavefunction.hpp"

namespace nnvmc {

/// The trainable parameters of `wf` (named_parameters() order, requires_grad only).
std::vector<torch::Tensor> trainable_parameters(WaveFunction& wf);

/// Total number of entries P of `params`.
std::int64_t parameter_count(const std::vector<torch::Tensor>& params);

/// J[i, :] = ∇θ log|ψ(r_i)| flattened in trainable_parameters() order, float64.
/// Walkers are processed in chunks of `chunk` (one forward pass and one vectorised backward
/// pass per chunk: the chunk's c one-hot output cotangents travel through the backward
/// graph together, so the work is c backward passes at the cost of one dispatch).
/// Exact for every WaveFunction whose walkers do not interact in forward().
/// @param sys the molecule @param r [B, N, 3] @return [B, P]
torch::Tensor per_sample_log_gradients(WaveFunction& wf, const SystemTensors& sys, const torch::Tensor& r,
                                       std::int64_t chunk);

/// θ ← θ + alpha·delta, with delta [P] in trainable_parameters() order (converted to each
/// parameter's dtype and device).
void add_to_parameters(const std::vector<torch::Tensor>& params, const torch::Tensor& delta,
                       double alpha);

}  // namespace nnvmc
