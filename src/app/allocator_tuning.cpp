#include "app/allocator_tuning.hpp"

#include <climits>
#include <cstdlib>
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace nnvmc::app {

bool tune_allocator() {
  const char* choice = std::getenv("NNVMC_MALLOC");
  if (choice != nullptr && std::strcmp(choice, "default") == 0) return false;
#if defined(__GLIBC__)
  // Large blocks from the heap, not from a fresh mmap each, and freed memory never trimmed.
  return mallopt(M_MMAP_MAX, 0) == 1 && mallopt(M_TRIM_THRESHOLD, INT_MAX) == 1 && mallopt(M_TOP_PAD, 64 << 20) == 1;
#else
  return false;
#endif
}

}  // namespace nnvmc::app
