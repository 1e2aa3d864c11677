#pragma once
/// @file kfac.hpp
/// K-FAC (Martens & Grosse 2015) for VMC, on the per-layer statistics of one recorded
/// forward + backward pass (train/recorded_pass.hpp), with the conventions of DeepQMC's and
/// FermiNet's use of kfac-jax (estimation_mode fisher_exact, normal predictive distribution
/// of log|ψ| with variance ½, repeated-dense blocks, no momentum):
///
/// - curvature F ≈ 2·E_b[O_b O_bᵀ] (O_b = ∇θ log|ψ_b|, not centred), block diagonal;
/// - a parameter pair (W [out, in], b [out]) used only as linear maps y = x·Wᵀ + b over S
///   positions per walker (electrons, pairs) gets the Kronecker block F_W = (1/S̄)·A ⊗ G with
///   A = Σ_{b,s} x̃ x̃ᵀ / B (x̃ = [x, 1] with a bias), G = 2·Σ_{b,s} g gᵀ / B
///   (g = ∂log|ψ_b|/∂y) and S̄ the positions per walker (kfac-jax's "repeated dense");
/// - every other parameter (envelopes, layer-norm scales, Jastrow factors, parameters used
///   outside the building blocks) gets a diagonal block D = 2·E_b[O_b²] (kfac-jax's diagonal
///   treatment of parameters that match no layer pattern);
/// - A, G, S̄ and D are moving averages (kfac-jax's normalised weighted average with decay ρ);
/// - gradient g = E_b[(E_L − Ē)·O_b] (clipped E_L; as DeepQMC), the update δ = (F + λ)⁻¹ g with
///   factored damping per Kronecker block: S̄·(G + √(λS̄)/π)⁻¹ g_W (A + π√(λS̄))⁻¹,
///   π = √((tr A / dim A) / (tr G / dim G)), and g/(D + λ) on the diagonal;
/// - θ ← θ − lr(t)·c·δ with c = min(1, √(C / (lr²·δᵀg))) (norm constraint C).
/// A step reads the host once (δᵀg); non-finite steps are rejected without touching the state.
#include <memory>

#include "train/optimizer.hpp"

namespace nnvmc {

/// The K-FAC optimizer (optim.type: kfac). `budget` bounds the working memory of its recorded
/// passes (walker chunks, as for the natural-gradient Jacobian).
std::unique_ptr<Optimizer> make_kfac(const OptimOptions& options, WaveFunction& wf,
                                     const batching::MemoryBudget& budget);

}  // namespace nnvmc
