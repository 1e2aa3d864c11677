#pragma once
/// @file held_memory.hpp
/// Memory held on a device for the rest of a run, outside every stage's working memory: the
/// memory pool of captured CUDA graphs (a graph's intermediates stay allocated for its
/// replays). fit_chunk subtracts it from the budget, so run.memory_budget bounds what the
/// graphs hold plus what a stage being planned uses. Thread-safe. Torch-free header.
#include <cstdint>

namespace nnvmc::batching {

/// Records that `holder` holds `bytes` (≥ 0) on `device` (−1: the CPU; ≥ 0: a CUDA index)
/// from now on, replacing what it held there before.
void hold_memory(int device, const void* holder, std::int64_t bytes);

/// Forgets what `holder` holds on `device`.
void release_memory(int device, const void* holder);

/// Bytes held on `device`: the sum over its holders (0 when none).
std::int64_t held_bytes(int device);

}  // namespace nnvmc::batching
