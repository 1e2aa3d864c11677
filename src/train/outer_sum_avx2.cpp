/// @file outer_sum_avx2.cpp
/// outer_sum's loops compiled for AVX2+FMA (this file alone gets -mavx2 -mfma; it runs only
/// after outer_sum::avx2_supported()), with non-temporal stores for outputs larger than the
/// cache: each row is summed in a buffer and streamed to memory once, so the write does not
/// first read the destination's cache lines (measured on 22 blocks of [256, 48·48] in a
/// [256, 53230] Jacobian, S = 4: 23.6 ms with plain stores, 17.6 ms streamed, 15.2 ms for a
/// fill of the same bytes).
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#define NNVMC_OUTER_SUM_VARIANT avx2
#include "train/outer_sum_kernel.hpp"

namespace nnvmc::outer_sum {
namespace {

constexpr std::int64_t kRowBuffer = 512;  ///< longest row streamed (doubles); longer rows in place

void stream_scalar(double* c, double v) {
  long long bits;
  std::memcpy(&bits, &v, sizeof bits);
  _mm_stream_si64(reinterpret_cast<long long*>(c), bits);
}

/// c[0, n) = acc[0, n) with non-temporal stores (8-byte ones up to 32-byte alignment).
void stream_row(double* c, const double* acc, std::int64_t n) {
  std::int64_t i = 0;
  for (; i < n && (reinterpret_cast<std::uintptr_t>(c + i) & 31) != 0; ++i) stream_scalar(c + i, acc[i]);
  for (; i + 4 <= n; i += 4) _mm256_stream_pd(c + i, _mm256_loadu_pd(acc + i));
  for (; i < n; ++i) stream_scalar(c + i, acc[i]);
}

}  // namespace

void run_avx2(const Args& a, std::int64_t begin, std::int64_t end) {
  if (!a.stream || a.accumulate || a.in > kRowBuffer) {
    avx2::kernel(a, begin, end);
    return;
  }
  alignas(64) double acc[kRowBuffer];
  for (std::int64_t b = begin; b < end; ++b) {
    const double* gb = a.g + b * a.g_batch;
    const double* xb = a.x + b * a.x_batch;
    double* cb = a.c + b * a.c_batch;
    for (std::int64_t o = 0; o < a.out; ++o) {
      avx2::row(gb + o, a.g_pos, xb, a.x_pos, a.positions, a.in, acc, false);
      stream_row(cb + o * a.c_row, acc, a.in);
    }
  }
  _mm_sfence();  // the streamed stores are visible before any later load of c
}

}  // namespace nnvmc::outer_sum
