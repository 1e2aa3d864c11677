#pragma once
/// Text helpers shared by the test executables (torch-free).
#include <fstream>
#include <iterator>
#include <string>

namespace nnvmc::test {

/// Whether `what` occurs in `s`.
inline bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

/// The bytes of the file at `path` ("" when it cannot be read).
inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace nnvmc::test
