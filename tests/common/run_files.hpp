#pragma once
/// Helpers for tests that run the trainer: scratch directories and result.h5 columns.
#include <filesystem>
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

}  // namespace nnvmc::test
