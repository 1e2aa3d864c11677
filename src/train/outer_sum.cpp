/// @file outer_sum.cpp
/// outer_sum's portable loops and the run-time choice of variant.
#define NNVMC_OUTER_SUM_VARIANT portable
#include "train/outer_sum_kernel.hpp"

namespace nnvmc::outer_sum {

void run_portable(const Args& a, std::int64_t begin, std::int64_t end) { portable::kernel(a, begin, end); }

#if defined(NNVMC_OUTER_SUM_AVX2)
bool avx2_supported() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes;
}
#else
bool avx2_supported() { return false; }
void run_avx2(const Args& a, std::int64_t begin, std::int64_t end) { portable::kernel(a, begin, end); }
#endif

void run(const Args& a, std::int64_t begin, std::int64_t end) {
  if (avx2_supported()) run_avx2(a, begin, end);
  else run_portable(a, begin, end);
}

}  // namespace nnvmc::outer_sum
