#pragma once
/// Shared helpers of the scf tests: locating files and reading the reference CSVs.
#include <gtest/gtest.h>

#include <fstream>
#include <stdexcept>
#include <sstream>
#include <string>
#include <vector>

#include "core/system.hpp"

namespace nnvmc::scf::scftest {

inline const std::string kMolecules = std::string(NNVMC_SOURCE_DIR) + "/configs/molecules";
inline const std::string kReference = std::string(NNVMC_SHARED_DIR) + "/reference";

/// Rows of a CSV file (comment lines '#' and the header skipped), split at commas.
inline std::vector<std::vector<std::string>> read_csv_rows(const std::string& path) {
  std::ifstream f(path);
  std::vector<std::vector<std::string>> rows;
  bool header = true;
  for (std::string line; std::getline(f, line);) {
    if (line.empty() || line[0] == '#') continue;
    if (header) {
      header = false;
      continue;
    }
    std::vector<std::string> cells;
    std::istringstream in(line);
    for (std::string c; std::getline(in, c, ',');) cells.push_back(c);
    rows.push_back(cells);
  }
  return rows;
}

/// Frame `k` (1-based) of ../shared/reference/water_clusters.xyz, loaded through a
/// single-frame temporary XYZ file (ångström → bohr by read_xyz).
inline System water_cluster(int k) {
  std::ifstream in(scftest::kReference + "/water_clusters.xyz");
  std::string line;
  for (int frame = 1;; ++frame) {
    if (!std::getline(in, line)) throw std::runtime_error("water_clusters.xyz: no frame " + std::to_string(k));
    const int n = std::stoi(line);
    std::string body = line + "\n";
    for (int i = 0; i <= n && std::getline(in, line); ++i) body += line + "\n";
    if (frame == k) {
      const std::string path = ::testing::TempDir() + "/nnvmc_water_" + std::to_string(k) + ".xyz";
      std::ofstream(path) << body;
      return read_xyz(path);
    }
  }
}

}  // namespace nnvmc::scf::scftest
