#pragma once
/// Reference energies from ../shared/reference/ccsd.csv (Psi4, all-electron).
#include <string>

namespace nnvmc::test {

struct CcsdReference {
  double e_rhf = 0, e_ccsd = 0, e_ccsd_t = 0;
};

/// The row for (molecule, basis). Fails the test (throws) when missing.
CcsdReference ccsd_reference(const std::string& molecule, const std::string& basis);

}  // namespace nnvmc::test
