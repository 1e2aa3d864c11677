#pragma once
/// @file created_directories.hpp
/// The directories a command created for its output, so that a start refused before it wrote
/// anything can leave the file system as it found it. Torch-free.
#include <string>
#include <system_error>
#include <vector>

namespace nnvmc::io {

/// Directories made by create(), deepest first.
struct CreatedDirectories {
  std::vector<std::string> made;  ///< each directory this call created, deepest (`dir`) first

  /// Creates `dir` with every missing parent (as std::filesystem::create_directories) and
  /// notes which of them did not exist before. Errors go to `ec`.
  static CreatedDirectories create(const std::string& dir, std::error_code& ec);

  /// Removes the noted directories, deepest first, each only while it is empty (what another
  /// process or a later step put there stays). Never throws.
  void remove_if_empty() const noexcept;
};

}  // namespace nnvmc::io
