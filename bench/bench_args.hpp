#pragma once
/// Small helpers shared by the benchmark programs' argument parsing.
#include <cstdio>
#include <exception>
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

/// Runs a benchmark's body; an exception (a bad argument, a device that is not there) becomes
/// "<program>: error: <what>" on stderr and exit code 1 instead of std::terminate's abort.
template <class Body>
int guarded_main(const char* program, Body&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    std::string what = e.what();
    // libtorch's errors carry a C++ backtrace after this line: the message is what matters
    const auto trace = what.find("\nException raised from");
    if (trace != std::string::npos) what.resize(trace);
    std::fprintf(stderr, "%s: error: %s\n", program, what.c_str());
    return 1;
  }
}

}  // namespace nnvmc::bench
