/// Pair-basis packing and unpacking (pair_packing.hpp): torch ops and fused host loops.
#include "ccsd/pair_packing.hpp"

#include <ATen/Dispatch.h>
#include <torch/torch.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "core/host_parallel.hpp"

namespace nnvmc::ccsd {

torch::Tensor pack_plus(const torch::Tensor& m, const PairPacking& p, const torch::Tensor& scale) {
  return (m.index_select(1, p.plus) + m.index_select(1, p.plus_swap)).mul_(scale);
}

torch::Tensor pack_minus(const torch::Tensor& m, const PairPacking& p, double scale) {
  return (m.index_select(1, p.minus) - m.index_select(1, p.minus_swap)).mul_(scale);
}

torch::Tensor unpack_pairs(const torch::Tensor& plus, const torch::Tensor& minus, const PairPacking& rows,
                           const PairPacking& cols) {
  torch::Tensor r = plus.index_select(0, rows.to_plus).index_select(1, cols.to_plus);
  return r.add_(torch::constant_pad_nd(minus, {0, 1, 0, 1}).index_select(0, rows.to_minus).index_select(1, cols.to_minus) *
                (rows.sign.unsqueeze(1) * cols.sign.unsqueeze(0)));
}

namespace {

/// Packed index of the pair (p, q), p ≤ q, of extent n (row-major over p ≤ q).
std::int64_t plus_index(std::int64_t p, std::int64_t q, std::int64_t n) { return p * n - p * (p - 1) / 2 + (q - p); }
/// Packed index of the pair (p, q), p < q (row-major over p < q).
std::int64_t minus_index(std::int64_t p, std::int64_t q, std::int64_t n) {
  return p * (n - 1) - p * (p - 1) / 2 + (q - p - 1);
}

/// Fused pack: for each pair row (i ≤ j), the v×v slab X[c, d] = x[i, c, j, d] (rows o·v apart,
/// cache-resident while it is read twice) gives its + row and, for i < j, its − row.
template <typename T>
void pack_host(const T* x, T* plus, T* minus, std::int64_t o, std::int64_t v) {
  const std::int64_t np = v * (v + 1) / 2, nm = v * (v - 1) / 2, rs = o * v;
  std::vector<std::pair<std::int64_t, std::int64_t>> pairs;  // (i, j ≥ i) in packed order
  for (std::int64_t i = 0; i < o; ++i)
    for (std::int64_t j = i; j < o; ++j) pairs.emplace_back(i, j);
  const T half = T(0.5);
  at::parallel_for(0, std::int64_t(pairs.size()), 1, [&](std::int64_t p0, std::int64_t p1) {
    for (std::int64_t p = p0; p < p1; ++p) {
      const auto [i, j] = pairs[std::size_t(p)];
      const T* xij = x + (i * v * o + j) * v;  // X[c, d] = xij[c·rs + d]
      T* pr = plus + p * np;
      T* mr = i < j ? minus + minus_index(i, j, o) * nm : nullptr;
      for (std::int64_t c = 0; c < v; ++c) {
        const T* row = xij + c * rs;
        T* pc = pr + plus_index(c, c, v);  // (c, d ≥ c) are consecutive
        for (std::int64_t d = c; d < v; ++d) pc[d - c] = (row[d] + xij[d * rs + c]) * half;
        if (!mr || c + 1 == v) continue;
        T* mc = mr + minus_index(c, c + 1, v);
        for (std::int64_t d = c + 1; d < v; ++d) mc[d - c - 1] = (row[d] - xij[d * rs + c]) * half;
      }
    }
  });
}

/// Fused unpack straight into [i, a, j, b]: each output row (i, a, j, ·) gathers one + row and
/// one − row of the packed product.
template <typename T>
void unpack_host(const T* plus, const T* minus, T* out, std::int64_t o, std::int64_t v) {
  const std::int64_t np = v * (v + 1) / 2, nm = v * (v - 1) / 2;
  std::vector<std::int64_t> tp(std::size_t(v * v)), tm(std::size_t(v * v));
  std::vector<T> sg(std::size_t(v * v));
  for (std::int64_t a = 0; a < v; ++a)
    for (std::int64_t b = 0; b < v; ++b) {
      const std::size_t ab = std::size_t(a * v + b);
      tp[ab] = plus_index(std::min(a, b), std::max(a, b), v);
      tm[ab] = a == b ? 0 : minus_index(std::min(a, b), std::max(a, b), v);  // (the diagonal is overwritten)
      sg[ab] = a < b ? T(1) : a > b ? T(-1) : T(0);
    }
  at::parallel_for(0, o, 1, [&](std::int64_t i0, std::int64_t i1) {
    for (std::int64_t i = i0; i < i1; ++i)
      for (std::int64_t a = 0; a < v; ++a) {
        const std::int64_t* tpa = tp.data() + a * v;
        const std::int64_t* tma = tm.data() + a * v;
        const T* sga = sg.data() + a * v;
        for (std::int64_t j = 0; j < o; ++j) {
          const T* pr = plus + plus_index(std::min(i, j), std::max(i, j), o) * np;
          T* dst = out + ((i * v + a) * o + j) * v;
          if (i == j || nm == 0) {
            for (std::int64_t b = 0; b < v; ++b) dst[b] = pr[tpa[b]];
            continue;
          }
          const T* mr = minus + minus_index(std::min(i, j), std::max(i, j), o) * nm;
          const T sij = i < j ? T(1) : T(-1);
          for (std::int64_t b = 0; b < v; ++b) dst[b] = pr[tpa[b]] + mr[tma[b]] * (sij * sga[b]);
          dst[a] = pr[tpa[a]];  // no − part on the diagonal
        }
      }
  });
}

}  // namespace

PackedLadder::Packed pack_pairs(const torch::Tensor& x, const PairPacking& po, const PairPacking& pv,
                                KernelChoice kernels) {
  const std::int64_t o = po.n, v = pv.n;
  if (use_host_kernels(x, kernels)) {
    PackedLadder::Packed p{torch::empty({po.n_plus, pv.n_plus}, x.options()),
                           torch::empty({po.n_minus, pv.n_minus}, x.options())};
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "pack_pairs", [&] {
      pack_host<scalar_t>(x.data_ptr<scalar_t>(), p.plus.data_ptr<scalar_t>(), p.minus.data_ptr<scalar_t>(), o, v);
    });
    return p;
  }
  const torch::Tensor xm = x.permute({0, 2, 1, 3}).reshape({o * o, v * v});  // [(i j), (c d)]
  const torch::Tensor half = torch::full({}, 0.5, x.options());
  return {pack_plus(xm.index_select(0, po.plus), pv, half),     // [i ≤ j, c ≤ d]
          pack_minus(xm.index_select(0, po.minus), pv, 0.5)};  // [i < j, c < d]
}

torch::Tensor unpack_pairs_iajb(const torch::Tensor& plus, const torch::Tensor& minus, const PairPacking& po,
                                const PairPacking& pv, KernelChoice kernels) {
  const std::int64_t o = po.n, v = pv.n;
  if (use_host_kernels(plus, kernels) && minus.is_contiguous() && minus.scalar_type() == plus.scalar_type()) {
    torch::Tensor out = torch::empty({o, v, o, v}, plus.options());
    AT_DISPATCH_FLOATING_TYPES(plus.scalar_type(), "unpack_pairs_iajb", [&] {
      unpack_host<scalar_t>(plus.data_ptr<scalar_t>(), minus.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), o, v);
    });
    return out;
  }
  return unpack_pairs(plus, minus, po, pv).view({o, o, v, v}).permute({0, 2, 1, 3}).contiguous();
}

}  // namespace nnvmc::ccsd
