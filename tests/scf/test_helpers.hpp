#pragma once
/// Shared helpers of the scf tests: locating files and reading the reference CSVs.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

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

}  // namespace nnvmc::scf::scftest
