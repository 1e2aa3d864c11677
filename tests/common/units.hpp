#pragma once
/// Byte units for the tests' memory budgets.
#include <cstdint>

namespace nnvmc::test {

inline constexpr std::int64_t kMiB = std::int64_t{1} << 20;

}  // namespace nnvmc::test
