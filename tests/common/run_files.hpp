#pragma once
/// Helpers for tests that run the trainer: scratch directories and result.h5 columns.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "io/hdf5_file.hpp"

namespace nnvmc::test {

/// A float64 column of an HDF5 results file.
inline std::vector<double> column(const std::string& file, const std::string& name) {
  io::H5File f(file, io::H5File::Mode::read);
  const auto a = f.read(name);
  return std::vector<double>(a.as<double>(), a.as<double>() + a.numel());
}

/// An empty directory under the system temp dir.
inline std::string fresh_dir(const std::string& name) {
  const auto d = std::filesystem::temp_directory_path() / name;
  std::filesystem::remove_all(d);
  return d.string();
}

/// The bytes of every file in `dir` but its lock, by name (a run's files before and after).
inline std::map<std::string, std::string> file_bytes(const std::string& dir) {
  std::map<std::string, std::string> bytes;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename() != ".nnvmc.lock") {
      std::ifstream in(e.path(), std::ios::binary);
      bytes[e.path().filename().string()] = std::string((std::istreambuf_iterator<char>(in)), {});
    }
  return bytes;
}

}  // namespace nnvmc::test
