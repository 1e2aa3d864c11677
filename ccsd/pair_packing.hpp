#pragma once
/// @file pair_packing.hpp
/// Packing of pair-symmetric four-index tensors into the symmetric (+) / antisymmetric (−) pair
/// basis of the packed ladder (packed_ladder.hpp), and back. Two implementations of the same
/// operations: torch ops (any device: index_select gathers, a permuted copy, arithmetic passes)
/// and fused host loops (CPU, one pass over the o²v² tensor instead of about eight), chosen per
/// call. Both give bit-identical results (same operations in the same order per element).
#include <torch/types.h>

#include <cstdint>

#include "ccsd/kernel_choice.hpp"
#include "ccsd/packed_ladder.hpp"

namespace nnvmc::ccsd {

/// Symmetric part of the pair columns of m [rows, n·n] (columns p·n + q): (m_pq + m_qp)·scale for
/// p ≤ q, as [rows, n(n+1)/2]; `scale` a number or per column (PairPacking::half_diag).
torch::Tensor pack_plus(const torch::Tensor& m, const PairPacking& p, const torch::Tensor& scale);
/// Antisymmetric part: (m_pq − m_qp)·scale for p < q, as [rows, n(n−1)/2].
torch::Tensor pack_minus(const torch::Tensor& m, const PairPacking& p, double scale);

/// x [i, c, j, d] (x_ij^cd = x_ji^dc) in the pair basis: plus [i ≤ j, c ≤ d] = ½(x_icjd + x_idjc),
/// minus [i < j, c < d] = ½(x_icjd − x_idjc). `po`, `pv`: the packings of the o and v axes.
PackedLadder::Packed pack_pairs(const torch::Tensor& x, const PairPacking& po, const PairPacking& pv,
                                KernelChoice kernels = KernelChoice::automatic);

/// The inverse layout of a packed pair-pair product: out [i, a, j, b] = plus[(i j)⁺, (a b)⁺] +
/// s_ij s_ab minus[(i j)⁻, (a b)⁻] (s = +1 for p < q, −1 for p > q; no − part where i = j or
/// a = b), from plus [o(o+1)/2, v(v+1)/2] and minus [o(o−1)/2, v(v−1)/2]. unpack(pack(x)) = x.
torch::Tensor unpack_pairs_iajb(const torch::Tensor& plus, const torch::Tensor& minus, const PairPacking& po,
                                const PairPacking& pv, KernelChoice kernels = KernelChoice::automatic);

/// The full [(p q), (r s)] matrix of a packed pair-pair product (torch ops): plus [p ≤ q, r ≤ s],
/// minus [p < q, r < s], rows packed as `rows`, columns as `cols`.
torch::Tensor unpack_pairs(const torch::Tensor& plus, const torch::Tensor& minus, const PairPacking& rows,
                           const PairPacking& cols);

}  // namespace nnvmc::ccsd
