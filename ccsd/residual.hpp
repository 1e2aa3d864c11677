#pragma once
/// @file residual.hpp
/// Closed-shell CCSD residuals in the T1-dressed formulation (Koch et al., J. Chem. Phys.
/// 104, 4157 (1996)); t1 [o, v] = t_i^a, t2 [o, v, o, v] = t_ij^ab, u = 2 t_ij^ab − t_ij^ba.
/// Two ways to get the dressed integrals: from a DressedHamiltonian (dressed every iteration:
/// least memory), or from t1-independent blocks kept for the run (CachedIntegrals: bare
/// o²v², o v³ blocks and the packed ladder; the dressing is then a few small contractions).
#include <torch/types.h>

#include <memory>

#include "ccsd/bare_blocks.hpp"
#include "ccsd/dressed.hpp"
#include "ccsd/packed_ladder.hpp"

namespace nnvmc::ccsd {

/// Ω1 [o, v] and Ω2 [o, v, o, v]; the amplitudes solve Ω = 0.
struct Residual {
  torch::Tensor r1;  ///< singles residual Ω_ai stored as [i, a]
  torch::Tensor r2;  ///< doubles residual Ω_aibj stored as [i, a, j, b]
};

/// Residuals for (t1, t2); `h` must be dressed with t1. Every heavy term is a planned
/// contraction of h's Contractor. Both residuals assume t2 exactly pair-symmetric
/// (t_iajb = t_jbia, as the iterations keep it): some contractions are written with the
/// symmetric index order so their operands need no re-layout.
Residual ccsd_residual(const DressedHamiltonian& h, Contractor& c, const torch::Tensor& t1,
                       const torch::Tensor& t2);

/// t1-independent integrals kept for the whole iteration (bare_blocks.hpp, packed_ladder.hpp).
struct CachedIntegrals {
  BareBlocks blocks;                     ///< bare o²v² / o v³ blocks and the bare Fock matrix
  std::unique_ptr<PackedLadder> ladder;  ///< packed vvvv (and ovvv) ladder integrals
  /// Bytes for o active occupied and v virtual orbitals.
  static std::int64_t bytes(std::int64_t o, std::int64_t v) {
    return BareBlocks::bytes(o, v) + PackedLadder::bytes(o, v);
  }
  /// `kernels`: the packed ladder's packing kernels (pair_packing.hpp).
  CachedIntegrals(const MoIntegrals& mo, Contractor& c, KernelChoice kernels = KernelChoice::automatic);
};

/// The same residuals from cached bare integrals: the dressed blocks are the bare ones plus
/// their t1 terms, the dressed vovo block's (c, d)-virtual part goes into the packed ladder
/// as τ = t2 + t1 t1.
Residual ccsd_residual(const CachedIntegrals& ci, Contractor& c, const torch::Tensor& t1, const torch::Tensor& t2);

/// Correlation energy Σ (t_ij^ab + t_i^a t_j^b) L_iajb with L_iajb = 2(ia|jb) − (ib|ja) [o, v, o, v].
double ccsd_correlation_energy_L(const torch::Tensor& L_ovov, const torch::Tensor& t1, const torch::Tensor& t2);

/// Correlation energy Σ (t_ij^ab + t_i^a t_j^b)(2(ia|jb) − (ib|ja)); g_ovov [o, v, o, v].
double ccsd_correlation_energy(const torch::Tensor& g_ovov, const torch::Tensor& t1, const torch::Tensor& t2);

}  // namespace nnvmc::ccsd
