#pragma once
/// @file reference.hpp
/// Reference energies of a comparison's molecules: the molecule file's e_ref, or CCSD(T) from
/// nnvmc's ccsd module in the comparison's reference basis (labelled with that basis).
#include <limits>
#include <string>
#include <vector>

#include "compare/spec.hpp"

namespace nnvmc::compare {

/// The reference of one molecule.
struct Reference {
  double energy = std::numeric_limits<double>::quiet_NaN();  ///< hartree (NaN: none)
  std::string kind;   ///< "e_ref" | "ccsd_t" | "none"
  std::string label;  ///< e.g. "exact at R=1.4 bohr (Kolos-Wolniewicz)" or "CCSD(T)/cc-pvtz (nnvmc ccsd)"
  double seconds = 0;  ///< time spent computing it (0 for e_ref)
};

/// One reference per molecule of `spec` (in its order). CCSD(T) results are cached in
/// `<output>/references.json` and reused when molecule, mode and basis agree.
/// A molecule CCSD(T) cannot treat (open shell) gets kind "none" and the reason as label.
/// @throws ConfigError naming reference_basis when the basis is unknown.
std::vector<Reference> compute_references(const CompareSpec& spec);

/// The references of `spec` as far as they are known without computing: e_ref, cached CCSD(T)
/// results, "none" for an open shell; a CCSD(T) still to compute has a NaN energy and says so
/// in its label. Reads the cache; writes nothing (`nnvmc compare --list`).
std::vector<Reference> known_references(const CompareSpec& spec);

}  // namespace nnvmc::compare
