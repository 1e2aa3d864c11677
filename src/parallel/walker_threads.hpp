#pragma once
/// @file walker_threads.hpp
/// Walkers are independent: on the CPU, a batch of walkers can be split into contiguous parts
/// that run at once, one per thread, each part single-threaded inside. This scales where
/// libtorch's intra-op parallelism does not: the VMC stages are long chains of small
/// elementwise ops (a [512, 4, 32] tanh is too short to share between threads), so intra-op
/// threads give 1.2–1.3× on two cores where two walker parts give close to 2×.
#include <cstdint>
#include <functional>

namespace nnvmc::parallel {

/// Walkers a part must have for splitting to pay (below it, one part).
inline constexpr std::int64_t kMinWalkersPerThread = 16;

/// Turns walker parts on or off for the process (config `run.walker_threads`, set like
/// `run.threads` sets libtorch's intra-op threads). On by default.
void set_walker_threads(bool enabled);

/// How many parts to split `walkers` rows into: libtorch's intra-op thread count when walker
/// parts are on, the rows live on the CPU, the caller's work `allows` it (e.g. it is
/// thread-safe) and every part gets at least kMinWalkersPerThread rows; otherwise 1 (GPUs
/// parallelise inside each op).
std::int64_t walker_parts(std::int64_t walkers, bool on_cpu, bool allows = true);

/// Parts and walkers per part's chunk for a batch whose one-pass chunk of `chunk` walkers was
/// fitted to a memory budget as fixed + chunk·per_walker bytes (chunk 0: no limit). Parts run at
/// once, so each takes (chunk·per_walker − (parts−1)·fixed) / (parts·per_walker) walkers at a
/// time (chunk/parts when the bytes are not known); when that is below one walker, fewer parts.
struct PartChunks {
  std::int64_t parts = 1;  ///< parts to run at once
  std::int64_t chunk = 0;  ///< walkers per chunk inside a part (0: the whole part)
};
PartChunks split_chunk(std::int64_t parts, std::int64_t chunk, std::int64_t fixed_bytes = 0,
                       std::int64_t bytes_per_walker = 0);

/// Runs fn(lo, hi) on the contiguous parts [lo, hi) of [0, walkers) (part p: from
/// walkers·p/parts to walkers·(p+1)/parts), all parts at once on libtorch's intra-op thread
/// pool. Each call sees the caller's thread-local state (grad mode, inference mode, dispatch
/// keys, functorch levels) and runs its libtorch ops single-threaded. The first exception a
/// part throws is rethrown here after all parts finished. parts ≤ 1: fn(0, walkers) on this
/// thread.
void for_each_walker_part(std::int64_t walkers, std::int64_t parts,
                          const std::function<void(std::int64_t lo, std::int64_t hi)>& fn);

}  // namespace nnvmc::parallel
