#pragma once
/// @file packed_ladder.hpp
/// The particle–particle ladder of T1-dressed CCSD in the symmetric/antisymmetric pair basis:
///   Σ_cd ĝ_acbd x_ij^cd = Σ_{c≤d} G⁺_{ab,cd} x⁺_ij,cd + Σ_{c<d} G⁻_{ab,cd} x⁻_ij,cd,
/// G^± = (ac|bd) ± (ad|bc) (½ on c = d for +), x^± = ½(x_ij^cd ± x_ij^dc). The + part is symmetric
/// in (ab) and (ij), the − part antisymmetric, so only a ≤ b, i ≤ j (a < b, i < j) are computed:
/// o²v⁴/2 GEMM FLOPs instead of 2o²v⁴. G^± are t1-independent (bare integrals, built once); the
/// dressing ĝ_acbd = Σ X_aa' X_bb' (a'c|b'd) (X = 1 − t1ᵀ) adds
///   − Σ_k t_ka Z_ij^kb − Σ_l t_lb Z_ji^la + Σ_kl t_ka t_lb W_kilj,  Z_ij^kb = Σ_cd (kc|bd) x_ij^cd,
/// with Z packed the same way (P^± = (kc|bd) ± (kd|bc)): o³v³/2 FLOPs.
#include <torch/types.h>

#include <cstdint>

#include "ccsd/bare_blocks.hpp"
#include "ccsd/contractor.hpp"
#include "ccsd/mo_integrals.hpp"

namespace nnvmc::ccsd {

/// Index maps between a square pair axis (p, q), p, q < n, flattened as p·n + q, and its
/// symmetric (p ≤ q) and antisymmetric (p < q) packed forms (pairs in row-major order).
struct PairPacking {
  explicit PairPacking(std::int64_t n);
  std::int64_t n = 0, n_plus = 0, n_minus = 0;  ///< extent, n(n+1)/2, n(n−1)/2
  torch::Tensor plus, plus_swap;    ///< [n_plus] flat indices p·n+q and q·n+p of the pairs p ≤ q
  torch::Tensor minus, minus_swap;  ///< [n_minus] the same for p < q
  torch::Tensor to_plus;            ///< [n·n] packed + index of (min(p,q), max(p,q))
  torch::Tensor to_minus;           ///< [n·n] packed − index, n_minus (a zero pad row) on the diagonal
  torch::Tensor sign;               ///< [n·n] +1 for p < q, −1 for p > q, 0 for p = q (float64)
  torch::Tensor half_diag;          ///< [n_plus] ½ on p = q, else 1 (float64)
};

/// Packed bare ladder integrals G^± [v(v±1)/2, v(v±1)/2] and P^± [o·v, v(v±1)/2].
class PackedLadder {
 public:
  /// Bytes of G^± and P^± (float64).
  static std::int64_t bytes(std::int64_t o, std::int64_t v);
  /// Builds G^± from the vvvv ERIs (conventional) or the vv Cholesky vectors in blocks of
  /// virtuals, and P^± from b.ovvv.
  PackedLadder(const MoIntegrals& mo, const BareBlocks& b, Contractor& c);

  /// Σ_cd ĝ_acbd x_ij^cd as [i, a, j, b] for amplitudes x [i, c, j, d] with x_ij^cd = x_ji^dc,
  /// ĝ dressed with t1 [o, v]; w [k, i, l, j] = Σ_cd x_icjd (kc|ld).
  torch::Tensor apply(const torch::Tensor& x, const torch::Tensor& t1, const torch::Tensor& w) const;

 private:
  Contractor& c_;
  PairPacking po_, pv_;
  torch::Tensor gp_, gm_, pp_, pm_;
};

}  // namespace nnvmc::ccsd
