#pragma once
/// Text helpers shared by the test executables (torch-free).
#include <string>

namespace nnvmc::test {

/// Whether `what` occurs in `s`.
inline bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

}  // namespace nnvmc::test
