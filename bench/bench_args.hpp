#pragma once
/// Small helpers shared by the benchmark programs' argument parsing.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace nnvmc::bench {

/// "a,b,c" → {"a", "b", "c"}.
inline std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, ',');) out.push_back(x);
  return out;
}

/// The "--key value" pairs of argv[first..], in order, each key one of `known`. `--help` / `-h`
/// prints `usage` and exits 0; an unknown key or a key without its value throws (a typo such as
/// --molecule for --molecules silently benchmarked the default). With `overrides`, arguments
/// holding '=' (config key=value overrides) are collected there instead.
inline std::vector<std::pair<std::string, std::string>> flag_pairs(int argc, char** argv, int first,
                                                                   const std::vector<std::string>& known,
                                                                   const std::string& usage,
                                                                   std::vector<std::string>* overrides = nullptr) {
  std::vector<std::pair<std::string, std::string>> out;
  for (int i = first; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--help" || k == "-h") {
      std::printf("%s\n", usage.c_str());
      std::exit(0);
    }
    if (overrides && k.find('=') != std::string::npos) {
      overrides->push_back(k);
      continue;
    }
    bool ok = false;
    for (const auto& name : known) ok = ok || name == k;
    if (!ok) throw std::runtime_error("unknown argument '" + k + "'\n" + usage);
    if (i + 1 >= argc) throw std::runtime_error(k + " needs a value\n" + usage);
    out.emplace_back(k, argv[++i]);
  }
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
