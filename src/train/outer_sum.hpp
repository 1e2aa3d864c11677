#pragma once
/// @file outer_sum.hpp
/// Per-sample sums of outer products, c[b] (+)= Σ_s g[b, s]ᵀ x[b, s]: the per-sample weight
/// gradient of a linear map written straight into the Jacobian's columns. Torch-free.
///
/// ATen's CPU bmm loops over the batch with one dispatched GEMM per sample; with the few
/// positions S of a walker (electrons) each GEMM is tiny and the loop, not the arithmetic or
/// the bytes, sets the time. These loops pass over each output row (in L1) once per position
/// and are compiled twice, portable and for AVX2+FMA, chosen at run time.
#include <cstdint>

namespace nnvmc::outer_sum {

/// Strided operands, all float64, innermost axes contiguous:
/// g[b, s, o] at g + b·g_batch + s·g_pos + o; x[b, s, i] at x + b·x_batch + s·x_pos + i
/// (x_batch = 0: one x shared by all samples); c[b, o, i] at c + b·c_batch + o·c_row + i.
struct Args {
  std::int64_t positions = 0;  ///< S
  std::int64_t out = 0;        ///< O
  std::int64_t in = 0;         ///< I
  const double* g = nullptr;
  std::int64_t g_batch = 0, g_pos = 0;
  const double* x = nullptr;
  std::int64_t x_batch = 0, x_pos = 0;
  double* c = nullptr;
  std::int64_t c_batch = 0, c_row = 0;
  bool accumulate = false;  ///< add to c instead of overwriting it
};

/// Up to this many positions the loops beat the per-sample GEMMs of a batched matmul on the
/// CPU (bench/outer_sum_bench; figures in bench/results/jacobian_presets.txt); above it the caller uses one.
inline constexpr std::int64_t kMaxPositions = 16;

/// c[b] (+)= Σ_s g[b, s]ᵀ x[b, s] for samples b in [begin, end), with the fastest variant this
/// CPU runs.
void run(const Args& a, std::int64_t begin, std::int64_t end);

/// The portable variant (for tests).
void run_portable(const Args& a, std::int64_t begin, std::int64_t end);
/// The AVX2+FMA variant (for tests); call only when avx2_supported().
void run_avx2(const Args& a, std::int64_t begin, std::int64_t end);
/// Whether this build has the AVX2+FMA variant and this CPU runs it.
bool avx2_supported();

}  // namespace nnvmc::outer_sum
