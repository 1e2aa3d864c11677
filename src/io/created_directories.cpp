#include "io/created_directories.hpp"

#include <filesystem>

namespace fs = std::filesystem;

namespace nnvmc::io {

CreatedDirectories CreatedDirectories::create(const std::string& dir, std::error_code& ec) {
  CreatedDirectories c;
  std::error_code probe;
  for (fs::path p = fs::absolute(fs::path(dir), probe).lexically_normal(); !probe && !p.empty() && p != p.root_path();
       p = p.parent_path()) {
    if (p.filename().empty()) continue;  // (a trailing '/')
    if (fs::exists(p, probe) || probe) break;
    c.made.push_back(p.string());
  }
  fs::create_directories(dir, ec);
  if (ec) c.made.clear();
  return c;
}

void CreatedDirectories::remove_if_empty() const noexcept {
  for (const auto& d : made) {
    std::error_code ec;
    if (!fs::remove(d, ec)) return;  // not empty (or gone): its parents are not empty either
  }
}

}  // namespace nnvmc::io
