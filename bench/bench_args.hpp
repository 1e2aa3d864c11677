#pragma once
/// Small helpers shared by the benchmark programs' argument parsing.
#include <sstream>
#include <string>
#include <vector>

namespace nnvmc::bench {

/// "a,b,c" → {"a", "b", "c"}.
inline std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, ',');) out.push_back(x);
  return out;
}

}  // namespace nnvmc::bench
