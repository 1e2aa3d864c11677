/// @file outer_sum.cpp
/// outer_sum's portable loops and the run-time choice of variant.
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <stdexcept>
#include <string>

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

std::int64_t last_level_cache_bytes() {
  static const std::int64_t bytes = [] {
    // sysfs first (what this core sees: in a VM, CPUID can report the host's whole L3), then
    // sysconf, then a typical 32 MiB.
    std::int64_t best = 0;
    for (int index = 0; index < 8; ++index) {
      std::ifstream size("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/size");
      std::string text;
      if (!(size >> text) || text.empty()) continue;
      std::int64_t v = 0;
      try {
        v = std::stoll(text);
      } catch (const std::exception&) {
        continue;
      }
      const char unit = text.back();
      if (unit == 'K') v <<= 10;
      else if (unit == 'M') v <<= 20;
      best = std::max(best, v);
    }
    long conf = -1;
#ifdef _SC_LEVEL3_CACHE_SIZE
    if (best == 0) conf = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
    if (best == 0 && conf > 0) best = conf;
    return best > 0 ? best : std::int64_t{32} << 20;
  }();
  return bytes;
}

void run(const Args& a, std::int64_t begin, std::int64_t end) {
  if (avx2_supported()) run_avx2(a, begin, end);
  else run_portable(a, begin, end);
}

}  // namespace nnvmc::outer_sum
