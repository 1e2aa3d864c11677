#include "reference.hpp"

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace nnvmc::test {

CcsdReference ccsd_reference(const std::string& molecule, const std::string& basis) {
  std::ifstream in(std::string(NNVMC_SHARED_DIR) + "/reference/ccsd.csv");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
    if (f.size() >= 7 && f[0] == molecule && f[1] == basis)
      return {std::stod(f[4]), std::stod(f[5]), std::stod(f[6])};
  }
  throw std::runtime_error("no reference for " + molecule + "/" + basis);
}

}  // namespace nnvmc::test
