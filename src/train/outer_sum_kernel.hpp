#pragma once
/// @file outer_sum_kernel.hpp
/// The loops of outer_sum::run, included by one translation unit per instruction set
/// (outer_sum.cpp portable, outer_sum_avx2.cpp with -mavx2 -mfma); the compiler vectorises the
/// innermost loop over i.
#include "train/outer_sum.hpp"

namespace nnvmc::outer_sum::NNVMC_OUTER_SUM_VARIANT {

/// One output row: c[i] (+)= Σ_s g[s·g_pos] · x[s·x_pos + i], i < n.
inline void row(const double* g, std::int64_t g_pos, const double* x, std::int64_t x_pos, std::int64_t positions,
                std::int64_t n, double* __restrict c, bool accumulate) {
  std::int64_t s = 0;
  if (!accumulate) {
    if (positions == 0) {
      for (std::int64_t i = 0; i < n; ++i) c[i] = 0.0;
      return;
    }
    const double gv = g[0];
    const double* __restrict x0 = x;
    for (std::int64_t i = 0; i < n; ++i) c[i] = gv * x0[i];
    s = 1;
  }
  for (; s < positions; ++s) {
    const double gv = g[s * g_pos];
    const double* __restrict xs = x + s * x_pos;
    for (std::int64_t i = 0; i < n; ++i) c[i] += gv * xs[i];
  }
}

/// Samples [begin, end), rows in place.
inline void kernel(const Args& a, std::int64_t begin, std::int64_t end) {
  for (std::int64_t b = begin; b < end; ++b) {
    const double* gb = a.g + b * a.g_batch;
    const double* xb = a.x + b * a.x_batch;
    double* cb = a.c + b * a.c_batch;
    for (std::int64_t o = 0; o < a.out; ++o)
      row(gb + o, a.g_pos, xb, a.x_pos, a.positions, a.in, cb + o * a.c_row, a.accumulate);
  }
}

}  // namespace nnvmc::outer_sum::NNVMC_OUTER_SUM_VARIANT
