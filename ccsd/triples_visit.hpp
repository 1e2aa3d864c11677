#pragma once
/// @file triples_visit.hpp
/// One visit of (T)'s energy sum, shared by the host loop (triples_kernels.cpp) and the CUDA
/// kernel (triples_cuda.cu), so that the formula the GPU runs is the one the CPU tests check.
/// Torch-free and header-only; compiled by the host compiler and by nvcc.
#include <cmath>

#if defined(__CUDACC__)
#define NNVMC_HOST_DEVICE __host__ __device__
#else
#define NNVMC_HOST_DEVICE
#endif

namespace nnvmc::ccsd {

/// One occupied triple's arrays: w contiguous [v, v, v]; ti, tj, tk [v]; gjk, gik, gij
/// contiguous [v, v] (g_pq[x, y] = (x p|y q)); ev [v] float64; I the index type of offsets.
template <typename T, typename I>
struct TripleArrays {
  const T* w;
  const T *ti, *tj, *tk, *gjk, *gik, *gij;
  const double* ev;
  I v;
};

/// (number of distinct orderings of (a, b, c) / 6) · Σ over the six orderings π of
/// W_π r3(V)_π / (dab − ε_c), for a ≥ b ≥ c and dab = e_ijk − ε_a − ε_b. With the even
/// orderings E = {abc, bca, cab} and the odd ones O = {acb, cba, bac},
/// r3(V)_π = 3 V_π + ΣV_E − 2 ΣV_O for π in E (E and O swapped for π in O), so the six terms
/// need only the six W and six V values; V_xyz = W_xyz + t_i[x] g_jk[y, z] + t_j[y] g_ik[x, z] +
/// t_k[z] g_ij[x, y].
template <typename T, typename I>
NNVMC_HOST_DEVICE inline double triple_visit(const TripleArrays<T, I>& x, I a, I b, I c, double dab) {
  const I v = x.v;
  const auto W = [&](I p, I q, I r) { return double(x.w[(p * v + q) * v + r]); };
  const auto V = [&](double wpqr, I p, I q, I r) {
    return wpqr + double(x.ti[p]) * double(x.gjk[q * v + r]) + double(x.tj[q]) * double(x.gik[p * v + r]) +
           double(x.tk[r]) * double(x.gij[p * v + q]);
  };
  const double w0 = W(a, b, c), w1 = W(b, c, a), w2 = W(c, a, b);  // even
  const double w3 = W(a, c, b), w4 = W(c, b, a), w5 = W(b, a, c);  // odd
  const double v0 = V(w0, a, b, c), v1 = V(w1, b, c, a), v2 = V(w2, c, a, b);
  const double v3 = V(w3, a, c, b), v4 = V(w4, c, b, a), v5 = V(w5, b, a, c);
  const double swe = w0 + w1 + w2, swo = w3 + w4 + w5, sve = v0 + v1 + v2, svo = v3 + v4 + v5;
  const double s = 3 * (w0 * v0 + w1 * v1 + w2 * v2 + w3 * v3 + w4 * v4 + w5 * v5) + swe * sve + swo * svo -
                   2 * (swe * svo + swo * sve);
  const double orderings = (a == b && b == c) ? 1.0 : (a == b || b == c) ? 3.0 : 6.0;
  return orderings / 6.0 * s / (dab - x.ev[c]);
}

/// The pair (a, b), 0 ≤ b ≤ a, numbered p = a(a+1)/2 + b (the CUDA kernel's warps walk p).
NNVMC_HOST_DEVICE inline void pair_of(long long p, long long& a, long long& b) {
  a = static_cast<long long>((std::sqrt(8.0 * double(p) + 1.0) - 1.0) / 2.0);
  while (a * (a + 1) / 2 > p) --a;
  while ((a + 1) * (a + 2) / 2 <= p) ++a;
  b = p - a * (a + 1) / 2;
}

}  // namespace nnvmc::ccsd
