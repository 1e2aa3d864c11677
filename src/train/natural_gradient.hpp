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

#include <cstdint>
#include <memory>
#include <vector>

#include "train/optimizer.hpp"

namespace nnvmc {

/// Centred and scaled per-walker data of one step, with Ō kept implicit: Ō = D·C·J, where J
/// [B, P] is the Jacobian as computed (never modified), C centres each molecule's block of rows
/// on that block's column means and D scales the rows of block m by s_m. The products below
/// apply C and D to B-vectors and to the B × B Gram matrix instead of to J, so a step reads J
/// only in the Gram GEMM and in its GEMVs, never writing it (two fewer passes over B × P than
/// centring J; bench/results/psgrad.txt). Centring after the product scales the Gram matrix's
/// rounding error by about 1 + |m|²/Σσ² (m the column means, σ² their variances); in float64
/// that is far below the damping (tests compare with centring first at |m|²/Σσ² = 100).
struct SrProblem {
  torch::Tensor j;                    ///< J [B, P] float64, uncentred (may alias the caller's)
  torch::Tensor eps;                  ///< ε [B] float64, centred and scaled
  std::vector<std::int64_t> edges;    ///< molecule m owns rows [edges[m], edges[m+1])
  std::vector<double> scales;         ///< s_m per molecule

  std::int64_t walkers() const { return j.size(0); }     ///< B
  std::int64_t parameters() const { return j.size(1); }  ///< P
  /// Ōx. @param x [P] @return [B]
  torch::Tensor o_mv(const torch::Tensor& x) const;
  /// Ōᵀy, into `out` when given (reused if it has the right size). @param y [B] @return [P]
  torch::Tensor ot_mv(const torch::Tensor& y, torch::Tensor* out = nullptr) const;
  /// ŌŌᵀ [B, B] into `out` (resized when needed), from gram_matrix of J.
  void gram(torch::Tensor& out) const;
  /// ŌᵀŌ = Σ_m s_m² (J_mᵀJ_m − B_m·μ_m μ_mᵀ) (μ_m block m's column means), without forming Ō.
  /// @return [P, P]
  torch::Tensor fisher() const;
  /// Ō as a new matrix (for tests). @return [B, P]
  torch::Tensor centred() const;
  /// D·C·y: each block of rows of y centred on its mean and scaled by s_m. @param y [B] or [B, k]
  /// @return the same shape
  torch::Tensor centre_and_scale(const torch::Tensor& y) const;
};

/// Ō and ε from the Jacobian J [B, P] and clipped local energies e [B]; a float64 J is not
/// copied or modified (the problem aliases it).
SrProblem make_sr_problem(const torch::Tensor& jacobian, const torch::Tensor& e);

/// Ō and ε of several molecules: rows of molecule m are centred on that molecule's means and
/// scaled by 1/√(B_m·M), so Ōᵀε is half the mean of the molecules' energy gradients and ŌᵀŌ
/// their mean Fisher matrix. The Jacobians are concatenated (one copy).
/// @param jacobians [B_m, P] each @param e [B_m] each @return Ō [ΣB_m, P], ε [ΣB_m]
SrProblem make_sr_problem(const std::vector<torch::Tensor>& jacobians, const std::vector<torch::Tensor>& e);

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

/// (S + λ)⁻¹ (Ōᵀε + v), solved in parameter space. @param v an extra right-hand side [P]
/// (a penalty's gradient; undefined: none) @return [P]
torch::Tensor sr_direction(const SrProblem& p, double damping, const torch::Tensor& v = {});

/// Ōᵀ (ŌŌᵀ + λ)⁻¹ ε, solved in sample space. With an extra right-hand side v [P] the result is
/// still (S + λ)⁻¹ (Ōᵀε + v), by the Woodbury identity Ōᵀ(ŌŌᵀ + λ)⁻¹(ε − Ōv/λ) + v/λ
/// (needs λ > 0). `buffers`, when given, are reused. @return [P]
torch::Tensor minsr_direction(const SrProblem& p, double damping, const torch::Tensor& v = {},
                              SampleSpaceBuffers* buffers = nullptr);

/// SPRING direction given the previous update `previous` [P] (undefined: none); an extra
/// right-hand side v [P] enters as in minsr_direction. @return [P]
torch::Tensor spring_direction(const SrProblem& p, double damping, double momentum,
                               const torch::Tensor& previous, const torch::Tensor& v = {},
                               SampleSpaceBuffers* buffers = nullptr);

/// The natural-gradient optimizer named by options.type ("sr", "minsr" or "spring"). Jacobian
/// chunks are optim.sr.chunk_walkers walkers (0: all), fewer if a measurement says that many
/// would not fit `budget` next to the B × P Jacobian and the B × B kernel. The Jacobian, the
/// kernel and the update live in buffers reused from step to step; a step reads the host
/// twice (Cholesky status, step size).
std::unique_ptr<Optimizer> make_natural_gradient(const OptimOptions& options, WaveFunction& wf,
                                                 const batching::MemoryBudget& budget);

}  // namespace nnvmc
