#pragma once
/// @file natural_gradient.hpp
/// Stochastic reconfiguration (SR), minSR and SPRING.
///
/// With Ō [B, P] the centred per-walker ∇θ log|ψ| divided by √B and ε [B] the centred
/// clipped local energies divided by √B, S = ŌᵀŌ is the Fisher matrix and Ōᵀε half the
/// energy gradient. The update is θ ← θ − lr(t)·δ with
///   sr:     δ = (S + λ)⁻¹ Ōᵀε                         (P × P solve)
///   minsr:  δ = Ōᵀ (ŌŌᵀ + λ)⁻¹ ε                       (B × B solve; equal to sr for λ > 0)
///   spring: δ = μδ₋ + Ōᵀ (ŌŌᵀ + λ + 11ᵀ/B)⁻¹ (ε − μŌδ₋) (δ₋ the previous update)
/// then lr is scaled down so that lr²·|Ōδ|² (sr.norm = fisher) or lr²·|δ|² (euclidean)
/// stays ≤ norm_constraint (when > 0).
#include <torch/torch.h>

#include <memory>

#include "train/optimizer.hpp"

namespace nnvmc {

/// Centred and scaled per-walker data of one step.
struct SrProblem {
  torch::Tensor o;    ///< Ō [B, P] float64
  torch::Tensor eps;  ///< ε [B] float64
};

/// Ō and ε from the Jacobian J [B, P] and clipped local energies e [B].
SrProblem make_sr_problem(const torch::Tensor& jacobian, const torch::Tensor& e);

/// Ō and ε of several molecules: rows of molecule m are centred on that molecule's means and
/// scaled by 1/√(B_m·M), so Ōᵀε is half the mean of the molecules' energy gradients and ŌᵀŌ
/// their mean Fisher matrix. @param jacobians [B_m, P] each @param e [B_m] each
/// @return Ō [ΣB_m, P], ε [ΣB_m]
SrProblem make_sr_problem(const std::vector<torch::Tensor>& jacobians, const std::vector<torch::Tensor>& e);

/// Ō and ε of one molecule computed in place: `jacobian` [B, P] float64 is centred and scaled
/// into Ō (no copy of the B × P matrix). @param e [B] @return Ō (aliasing `jacobian`), ε [B]
SrProblem make_sr_problem_in_place(torch::Tensor& jacobian, const torch::Tensor& e);

/// Buffers the sample-space solves (minsr, spring) reuse from step to step, so that a step
/// allocates nothing of size B² or P (fresh large buffers cost page faults on the CPU).
struct SampleSpaceBuffers {
  torch::Tensor kernel;  ///< [B, B] ŌŌᵀ + shifts
  torch::Tensor factor;  ///< [B, B] its Cholesky factor
  torch::Tensor info;    ///< [] Cholesky status
  torch::Tensor update;  ///< [P] δ
};

/// G = ŌŌᵀ [B, B] written into `out` (resized when needed): only the lower block triangle of
/// `blocks` × `blocks` row blocks is multiplied (GEMMs of (k+1)/2k of the full product's FLOPs,
/// like a rank-k update) and mirrored. @param o [B, P]
void gram_matrix(const torch::Tensor& o, torch::Tensor& out, int blocks = 4);

/// x = (L Lᵀ)⁻¹ b from a Cholesky factor by two triangular solves. Unlike torch::cholesky_solve
/// it reads nothing on the host (no device sync); a bad factor gives non-finite x.
/// @param b [n, k] @param l [n, n] lower triangular @return [n, k]
torch::Tensor cholesky_solve_unchecked(const torch::Tensor& b, const torch::Tensor& l);

/// Solves A x = b for symmetric positive (semi)definite A [n, n] and b [n] or [n, k] by
/// Cholesky; when it fails, retries with a growing diagonal jitter. One host read when the
/// first factorisation succeeds. `factor`/`info`, when given, are reused as output buffers.
/// @throws NumericalError when no jitter helps or the solution is not finite.
torch::Tensor spd_solve(const torch::Tensor& a, const torch::Tensor& b, SampleSpaceBuffers* buffers = nullptr);

/// (S + λ)⁻¹ Ōᵀε, solved in parameter space. @return [P]
torch::Tensor sr_direction(const SrProblem& p, double damping);

/// Ōᵀ (ŌŌᵀ + λ)⁻¹ ε, solved in sample space. @return [P]
torch::Tensor minsr_direction(const SrProblem& p, double damping, SampleSpaceBuffers* buffers = nullptr);

/// SPRING direction given the previous update `previous` [P] (undefined: none).
/// @return [P]
torch::Tensor spring_direction(const SrProblem& p, double damping, double momentum,
                               const torch::Tensor& previous, SampleSpaceBuffers* buffers = nullptr);

/// The natural-gradient optimizer named by options.type ("sr", "minsr" or "spring"). Jacobian
/// chunks are optim.sr.chunk_walkers walkers (0: all), fewer if a measurement says that many
/// would not fit `budget` next to the B × P Jacobian and the B × B kernel. The Jacobian, the
/// kernel and the update live in buffers reused from step to step; a step reads the host
/// twice (Cholesky status, step size).
std::unique_ptr<Optimizer> make_natural_gradient(const OptimOptions& options, WaveFunction& wf,
                                                 const batching::MemoryBudget& budget);

}  // namespace nnvmc
