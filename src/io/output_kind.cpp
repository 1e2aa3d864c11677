#include "io/output_kind.hpp"

#include <filesystem>
#include <initializer_list>

namespace nnvmc::io {
namespace {
std::string first_existing(const std::string& dir, std::initializer_list<const char*> names) {
  std::error_code ec;
  for (const char* name : names)
    if (std::filesystem::exists(std::filesystem::path(dir) / name, ec)) return name;
  return "";
}
}  // namespace

std::string training_run_marker(const std::string& dir) {
  return first_existing(dir, {"checkpoint.h5", "summary.json", "result.h5", "checkpoint.h5.previous",
                              "summary.json.previous"});
}

std::string comparison_marker(const std::string& dir) {
  return first_existing(dir, {"compare.h5", "compare.csv", "references.json", "cells"});
}

}  // namespace nnvmc::io
