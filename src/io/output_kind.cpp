#include "io/output_kind.hpp"

#include <filesystem>
#include <fstream>

#include "core/errors.hpp"
#include "io/hdf5_file.hpp"

namespace nnvmc::io {
namespace fs = std::filesystem;

namespace {
/// Whether `dir`/`name` exists (false when it cannot be checked).
bool has(const std::string& dir, const std::string& name) {
  std::error_code ec;
  return fs::exists(fs::path(dir) / name, ec);
}
}  // namespace

std::string training_run_marker(const std::string& dir) {
  for (const char* checkpoint : {"checkpoint.h5", "checkpoint.h5.previous", "summary.json.previous"})
    if (has(dir, checkpoint)) return checkpoint;
  if (has(dir, "config.yaml"))
    for (const char* results : {"summary.json", "result.h5"})
      if (has(dir, results)) return std::string("config.yaml and ") + results;
  return "";
}

bool is_run_config(const std::string& path) {
  std::ifstream in(path);
  std::string first;
  return in && std::getline(in, first) && first == kRunConfigHeader;
}

std::vector<std::string> foreign_run_files(const std::string& dir) {
  const fs::path results = fs::path(dir) / "result.h5";
  bool run_results = false;  // result.h5 with a run id
  if (has(dir, "result.h5")) try {
      run_results = H5File(results.string(), H5File::Mode::read).has_attr("run_id");
    } catch (const Error&) {  // (not HDF5, unreadable: not a run's either)
    }
  std::vector<std::string> out;
  if (has(dir, "config.yaml") && !is_run_config((fs::path(dir) / "config.yaml").string()) && !run_results)
    out.push_back("config.yaml");
  if (has(dir, "result.h5") && !run_results) out.push_back("result.h5");
  return out;
}

std::string comparison_marker(const std::string& dir) {
  for (const char* table : {"compare.csv", "compare.h5"})
    if (has(dir, table)) return table;
  std::error_code ec;
  fs::directory_iterator it(fs::path(dir) / "cells", ec);
  for (const fs::directory_iterator end; !ec && it != end; it.increment(ec))
    if (has(it->path().string(), "cell.yaml")) return "cells/" + it->path().filename().string() + "/cell.yaml";
  // a cells/ that cannot be read may be a comparison's: not taken for a user's own folder
  if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory) return "cells (unreadable)";
  return "";
}

namespace {
/// `dir` made absolute with its symbolic links resolved (lexically normalised where a part cannot
/// be read); empty when it cannot be made absolute.
fs::path resolved(const std::string& dir) {
  std::error_code ec;
  const fs::path absolute = fs::absolute(fs::path(dir), ec);
  if (ec) return {};
  fs::path path = fs::weakly_canonical(absolute, ec);
  return ec ? absolute.lexically_normal() : path;
}
}  // namespace

std::string enclosing_output(const std::string& dir) {
  // symbolic links resolved: a link to a comparison's cells/x is inside that comparison
  fs::path path = resolved(dir);
  if (path.empty()) return "";
  if (!path.has_filename() && path.has_parent_path()) path = path.parent_path();  // "CMP/" is CMP itself
  for (fs::path up = path.parent_path(); !up.empty() && up != up.root_path(); up = up.parent_path()) {
    if (const std::string m = comparison_marker(up.string()); !m.empty())
      return "comparison (" + m + ") in '" + up.string() + "'";
    if (const std::string m = profile_marker(up.string()); !m.empty())
      return "profile (" + m + ") in '" + up.string() + "'";
  }
  return "";
}

bool is_filesystem_root(const std::string& dir) {
  const fs::path path = resolved(dir);
  return !path.empty() && path == path.root_path();
}

std::string profile_marker(const std::string& dir) {
  for (const char* file : {"profile.json", "profile.h5"})
    if (has(dir, file)) return file;
  return "";
}

}  // namespace nnvmc::io
