#include "io/created_directories.hpp"

#include <filesystem>

namespace fs = std::filesystem;

namespace nnvmc::io {

CreatedDirectories CreatedDirectories::create(const std::string& dir, std::error_code& ec) {
  CreatedDirectories c;
  // The missing part of the path as given (no lexical normalisation: "link/../x" goes through
  // the link, as the system resolves it), then made one directory at a time from the top; only
  // those this call made are noted (one another process made at the same moment is not).
  std::vector<fs::path> missing;
  fs::path p(dir);
  if (p.has_filename() == false && p.has_parent_path()) p = p.parent_path();  // (a trailing '/')
  std::error_code probe;
  for (; !p.empty() && p != p.root_path(); p = p.parent_path()) {
    if (fs::exists(p, probe) || probe) break;
    missing.push_back(p);
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    std::error_code made;
    if (fs::create_directory(*it, made)) c.made.insert(c.made.begin(), it->string());
    else if (made) break;  // (reported by create_directories below)
  }
  fs::create_directories(dir, ec);
  if (ec) {
    c.remove_if_empty();
    c.made.clear();
  }
  return c;
}

void CreatedDirectories::remove_if_empty() const noexcept {
  for (const auto& d : made) {
    std::error_code ec;
    if (!fs::remove(d, ec)) return;  // not empty (or gone): its parents are not empty either
  }
}

}  // namespace nnvmc::io
