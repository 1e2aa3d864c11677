#include "train/molecule_batches.hpp"

#include <algorithm>
#include <numeric>

namespace nnvmc {
namespace {
/// splitmix64: a small generator with a fixed, portable output sequence.
std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
}  // namespace

std::vector<std::size_t> molecules_for_iteration(std::size_t n, int per_step, std::uint64_t seed, std::int64_t t) {
  std::vector<std::size_t> all(n);
  std::iota(all.begin(), all.end(), std::size_t{0});
  if (per_step <= 0 || static_cast<std::size_t>(per_step) >= n) return all;
  std::uint64_t state = seed ^ (0xd1b54a32d192ed03ull * static_cast<std::uint64_t>(t + 1));
  const auto k = static_cast<std::size_t>(per_step);
  for (std::size_t i = 0; i < k; ++i) {  // partial Fisher–Yates shuffle
    const std::size_t j = i + static_cast<std::size_t>(splitmix64(state) % (n - i));
    std::swap(all[i], all[j]);
  }
  all.resize(k);
  std::sort(all.begin(), all.end());
  return all;
}

}  // namespace nnvmc
