#pragma once
/// @file determinant_balance.hpp
/// oneqmc's determinant-balance penalty (loss.py, det_penalty_weight = 1e-3 in the published
/// Orbformer runs), for trainers that want it; the trainer adds weight · ∇θ P to the energy
/// gradient (or to the right-hand side of a natural-gradient step).
#include <torch/torch.h>

#include "core/config.hpp"
#include "models/wavefunction.hpp"

namespace nnvmc {

/// oneqmc's default weight of the penalty (optim.determinant_balance for adam).
inline constexpr double kDeterminantBalanceWeight = kDeterminantBalanceDefault;

/// P = −σ_E · mean over walkers and determinants of log p_k, p = softmax_k(log|det_k|)
/// (WaveFunction::determinant_log_weights). P is smallest when the K determinants contribute
/// equally and grows when one dominates; σ_E scales it like the energy gradient.
/// @param r [B, N, 3] @param energy_std σ_E, the standard deviation of the local energies
/// (a constant) @return scalar tensor differentiable in the parameters, or an undefined tensor
/// when the ansatz has no determinant weights.
torch::Tensor determinant_balance_penalty(WaveFunction& wf, const torch::Tensor& r, const SystemTensors& sys,
                                          double energy_std);

/// Sample standard deviation of `e` [B] (B ≥ 2) as a 0-dim tensor, computed without reading the
/// host (torch::std reads one scalar on the CPU).
torch::Tensor energy_std(const torch::Tensor& e);

/// The same with σ_E a 0-dim tensor (detached), so that the trainer reads nothing on the host.
torch::Tensor determinant_balance_penalty(WaveFunction& wf, const torch::Tensor& r, const SystemTensors& sys,
                                          const torch::Tensor& energy_std);

}  // namespace nnvmc
