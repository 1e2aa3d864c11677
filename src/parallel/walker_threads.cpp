#include "parallel/walker_threads.hpp"

#include <ATen/ThreadLocalState.h>

#include <algorithm>
#include <atomic>

#include "core/host_parallel.hpp"

namespace nnvmc::parallel {

namespace {
std::atomic<bool> g_enabled{true};
}  // namespace

void set_walker_threads(bool enabled) { g_enabled = enabled; }

std::int64_t walker_parts(std::int64_t walkers, bool on_cpu, bool allows) {
  if (!g_enabled || !allows || !on_cpu || at::in_parallel_region()) return 1;
  const std::int64_t threads = at::get_num_threads();
  return std::max<std::int64_t>(1, std::min(threads, walkers / kMinWalkersPerThread));
}

PartChunks split_chunk(std::int64_t parts, std::int64_t chunk, std::int64_t fixed_bytes, std::int64_t bytes_per_walker) {
  if (chunk <= 0) return {std::max<std::int64_t>(1, parts), 0};
  for (std::int64_t p = std::max<std::int64_t>(1, parts); p > 1; --p) {
    const std::int64_t c = bytes_per_walker > 0 ? (chunk * bytes_per_walker - (p - 1) * fixed_bytes) / (p * bytes_per_walker)
                                                : chunk / p;
    if (c >= 1) return {p, c};
  }
  return {1, chunk};
}

void for_each_walker_part(std::int64_t walkers, std::int64_t parts,
                          const std::function<void(std::int64_t lo, std::int64_t hi)>& fn) {
  if (parts <= 1) {
    fn(0, walkers);
    return;
  }
  const at::ThreadLocalState caller;  // taken on this thread, installed on each worker
  // Grain 1 over `parts` items: at most one part per thread when parts ≤ threads. Inside
  // the region at::in_parallel_region() holds, so the parts' own ops run single-threaded.
  at::parallel_for(0, parts, 1, [&](std::int64_t p0, std::int64_t p1) {
    at::ThreadLocalStateGuard guard(caller);
    for (std::int64_t p = p0; p < p1; ++p) fn(walkers * p / parts, walkers * (p + 1) / parts);
  });
}

}  // namespace nnvmc::parallel
