#pragma once
/// @file packed_ladder.hpp
/// The particle–particle ladder of T1-dressed CCSD in the symmetric/antisymmetric pair basis:
///   Σ_cd ĝ_acbd x_ij^cd = Σ_{c≤d} G⁺_{ab,cd} x⁺_ij,cd + Σ_{c<d} G⁻_{ab,cd} x⁻_ij,cd,
/// G^± = (ac|bd) ± (ad|bc) (½ on c = d for +), x^± = ½(x_ij^cd ± x_ij^dc). The + part is symmetric
/// in (ab) and (ij), the − part antisymmetric, so only a ≤ b, i ≤ j (a < b, i < j) are computed:
/// o²v⁴/2 GEMM FLOPs instead of 2o²v⁴. G^± are t1-independent (bare integrals, built once); the
/// dressing ĝ_acbd = Σ X_aa' X_bb' (a'c|b'd) (X = 1 − t1ᵀ) adds
///   − Σ_k t_ka Z_ij^kb − Σ_l t_lb Z_ji^la + Σ_kl t_ka t_lb q_kilj,  Z_ij^kb = Σ_cd (kc|bd) x_ij^cd,
/// q_kilj = Σ_cd x_icjd (kc|ld) (callers add further oooo operands of the same t1·t1 form),
/// with Z packed the same way (P^± = (kc|bd) ± (kd|bc)): o³v³/2 FLOPs.
/// The hole–hole pieces reuse the packed amplitudes: w_kilj = Σ_cd x_icjd (kc|ld) with
/// g^±_kl,cd = (kc|ld) ± (kd|lc), and Σ_kl x_kalb W_kilj (for W_kilj = W_ljki) with W packed over
/// (kl): o²v²·o²/2 FLOPs each instead of 2o⁴v².
#include <torch/types.h>

#include <cstdint>

#include "ccsd/bare_blocks.hpp"
#include "ccsd/contractor.hpp"
#include "ccsd/kernel_choice.hpp"
#include "ccsd/mo_integrals.hpp"

namespace nnvmc::ccsd {

/// Index maps between a square pair axis (p, q), p, q < n, flattened as p·n + q, and its
/// symmetric (p ≤ q) and antisymmetric (p < q) packed forms (pairs in row-major order).
struct PairPacking {
  /// Maps for extent n, with the index and weight tensors on `device`.
  explicit PairPacking(std::int64_t n, const torch::Device& device = torch::kCPU);
  std::int64_t n = 0, n_plus = 0, n_minus = 0;  ///< extent, n(n+1)/2, n(n−1)/2
  torch::Tensor plus, plus_swap;    ///< [n_plus] flat indices p·n+q and q·n+p of the pairs p ≤ q
  torch::Tensor minus, minus_swap;  ///< [n_minus] the same for p < q
  torch::Tensor to_plus;            ///< [n·n] packed + index of (min(p,q), max(p,q))
  torch::Tensor to_minus;           ///< [n·n] packed − index, n_minus (a zero pad row) on the diagonal
  torch::Tensor sign;               ///< [n·n] +1 for p < q, −1 for p > q, 0 for p = q (float64)
  torch::Tensor half_diag;          ///< [n_plus] ½ on p = q, else 1 (float64)
};

/// Packed bare ladder integrals G^± [v(v±1)/2, v(v±1)/2], P^± [o·v, v(v±1)/2] and
/// g^± [o(o±1)/2, v(v±1)/2], on the device of the bare blocks (so are its index maps).
class PackedLadder {
 public:
  /// Bytes of G^±, P^± and g^± (float64).
  static std::int64_t bytes(std::int64_t o, std::int64_t v);
  /// Builds G^± from the vvvv ERIs (conventional) or the vv Cholesky vectors in blocks of
  /// virtuals, P^± from b.ovvv and g^± from b.ovov. `kernels`: how the amplitudes are packed and
  /// the result unpacked (pair_packing.hpp).
  PackedLadder(const MoIntegrals& mo, const BareBlocks& b, Contractor& c,
               KernelChoice kernels = KernelChoice::automatic);

  /// Amplitudes x [i, c, j, d] (x_ij^cd = x_ji^dc) in the pair basis: plus [i ≤ j, c ≤ d] =
  /// ½(x_ij^cd + x_ij^dc), minus [i < j, c < d] = ½(x_ij^cd − x_ij^dc).
  struct Packed {
    torch::Tensor plus, minus;
  };
  Packed pack(const torch::Tensor& x) const;

  /// w [k, i, l, j] = Σ_cd x_icjd (kc|ld) from the packed amplitudes.
  torch::Tensor w(const Packed& x) const;

  /// Σ_cd ĝ_acbd x_ij^cd as [i, a, j, b], ĝ dressed with t1 [o, v]; q [k, i, l, j] is the
  /// operand of its t1·t1 term Σ_kl t_ka t_lb q_kilj (Σ_cd x_icjd (kc|ld) alone, or with more
  /// oooo terms the caller adds). With W [k, i, l, j] (W_kilj = W_ljki) defined, the hole–hole
  /// ladder Σ_kl x_kalb W_kilj is added in the pair basis.
  torch::Tensor apply(const Packed& x, const torch::Tensor& t1, const torch::Tensor& q,
                      const torch::Tensor& W = torch::Tensor()) const;
  /// The same from unpacked amplitudes x [i, c, j, d], without W.
  torch::Tensor apply(const torch::Tensor& x, const torch::Tensor& t1, const torch::Tensor& q) const {
    return apply(pack(x), t1, q);
  }

 private:
  Contractor& c_;
  KernelChoice kernels_;
  PairPacking po_, pv_;
  torch::Tensor gp_, gm_, pp_, pm_;
  torch::Tensor gop_, gom_;  ///< g^± [o(o±1)/2, v(v±1)/2] from (kc|ld)
};

}  // namespace nnvmc::ccsd
