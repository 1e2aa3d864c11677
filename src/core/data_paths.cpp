#include "core/data_paths.hpp"

#include <cstdlib>
#include <filesystem>
#include <system_error>

#ifndef NNVMC_SOURCE_DIR_DEFAULT
#define NNVMC_SOURCE_DIR_DEFAULT "."
#endif

namespace nnvmc {
namespace fs = std::filesystem;

namespace {
std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

/// <prefix>/share/nnvmc for an executable at <prefix>/bin/…, when it holds data/basis.
std::string installed_root() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  const fs::path root = exe.parent_path().parent_path() / "share" / "nnvmc";
  return fs::is_directory(root / "data" / "basis", ec) ? root.string() : std::string();
}
}  // namespace

std::string data_root() {
  if (const char* v = std::getenv("NNVMC_DATA_DIR"); v && *v) return v;
  static const std::string installed = installed_root();
  return installed.empty() ? std::string(NNVMC_SOURCE_DIR_DEFAULT) : installed;
}

std::string basis_data_dir() { return env_or("NNVMC_BASIS_DIR", data_root() + "/data/basis"); }
std::string molecules_data_dir() { return env_or("NNVMC_MOLECULES", data_root() + "/configs/molecules"); }
std::string scripts_data_dir() { return env_or("NNVMC_SCRIPTS", data_root() + "/scripts"); }

}  // namespace nnvmc
