/// @file outer_sum_avx2.cpp
/// outer_sum's loops compiled for AVX2+FMA (this file alone gets -mavx2 -mfma; it runs only
/// after outer_sum::avx2_supported()).
#define NNVMC_OUTER_SUM_VARIANT avx2
#include "train/outer_sum_kernel.hpp"

namespace nnvmc::outer_sum {

void run_avx2(const Args& a, std::int64_t begin, std::int64_t end) { avx2::kernel(a, begin, end); }

}  // namespace nnvmc::outer_sum
