#pragma once
/// @file molecule_batches.hpp
/// Which molecules an iteration trains on (optim.molecules_per_step): a function of the run's
/// seed and the iteration alone, so a resumed run draws the same batches without storing them.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace nnvmc {

/// Indices (ascending) of the molecules trained at iteration t: all `n` when `per_step` is 0 or
/// at least n, otherwise `per_step` distinct ones drawn uniformly from a generator seeded by
/// (seed, t).
std::vector<std::size_t> molecules_for_iteration(std::size_t n, int per_step, std::uint64_t seed, std::int64_t t);

}  // namespace nnvmc
