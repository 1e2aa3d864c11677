#pragma once
/// @file per_sample_gradients.hpp
/// Per-walker gradients of log|ψ| with respect to all parameters (the B × P Jacobian) and
/// flat views of a module's parameters, for the natural-gradient optimizers.
#include <torch/torch.h>

#include <vector>

#include "batching/budget.hpp"
#include "models/wavefunction.hpp"

namespace nnvmc {

/// The trainable parameters of `wf` (named_parameters() order, requires_grad only).
std::vector<torch::Tensor> trainable_parameters(WaveFunction& wf);

/// Total number of entries P of `params`.
std::int64_t parameter_count(const std::vector<torch::Tensor>& params);

/// Walkers per vmapped backward pass for parameters used outside the building blocks.
inline constexpr std::int64_t kFallbackChunk = 16;

/// J[i, :] = ∇θ log|ψ(r_i)| flattened in trainable_parameters() order, float64.
/// Each chunk of `chunk` walkers is one recorded forward pass and one backward pass
/// (train/recorded_pass.hpp): linear layers' gradients are contractions of their recorded
/// inputs and output gradients, other parameters of the building blocks use per-sample
/// replicas, and parameters used outside the blocks fall back to vmapped backward passes of
/// min(chunk, kFallbackChunk) walkers. Exact for every WaveFunction whose walkers do not
/// interact in forward(). @param sys the molecule @param r [B, N, 3] @return [B, P]
torch::Tensor per_sample_log_gradients(WaveFunction& wf, const SystemTensors& sys, const torch::Tensor& r,
                                       std::int64_t chunk);

/// As per_sample_log_gradients, written into `out` [B, P] float64, which is reused when it has
/// that shape, dtype and device (and replaced otherwise): no allocation of the Jacobian per step.
void per_sample_log_gradients_into(WaveFunction& wf, const SystemTensors& sys, const torch::Tensor& r,
                                   std::int64_t chunk, torch::Tensor& out);

/// Walkers per pass of the per-sample gradients: `want` (0: all of r's walkers), fewer when a
/// measurement of the passes' working memory (one and a few walkers) says that many would not
/// fit `budget` next to `reserved_bytes` kept by the caller. @param r [B, N, 3]
/// @throws BudgetError (naming run.memory_budget) when one walker does not fit
std::int64_t fit_per_sample_chunk(WaveFunction& wf, const SystemTensors& sys, const torch::Tensor& r,
                                  std::int64_t want, const batching::MemoryBudget& budget,
                                  std::int64_t reserved_bytes);

/// fit_per_sample_chunk kept between steps, and fitted again when the device holds more memory
/// than when it was fitted (batching/held_memory.hpp: a CUDA graph captured since, whose pool
/// replaces or exceeds its warm-up estimate), so the pool and the passes stay within the budget.
class PerSampleChunk {
 public:
  /// Walkers per pass for these walkers; arguments as fit_per_sample_chunk's.
  std::int64_t operator()(WaveFunction& wf, const SystemTensors& sys, const torch::Tensor& r, std::int64_t want,
                          const batching::MemoryBudget& budget, std::int64_t reserved_bytes);
  /// The last chunk (0 before the first call).
  std::int64_t value() const { return chunk_; }

 private:
  std::int64_t chunk_ = 0;
  std::int64_t held_ = 0;  ///< held memory when fitted
};

/// θ ← + alpha·delta, with delta [P] in trainable_parameters() order (converted to each
/// parameter's dtype and device).
void add_to_parameters(const std::vector<torch::Tensor>& params, const torch::Tensor& delta,
                       double alpha);

}  // namespace nnvmc
