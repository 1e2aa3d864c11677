#pragma once
/// @file basis_file.hpp
/// Reading Gaussian basis set files in NWChem format (as exported by the Basis Set
/// Exchange) into per-element shell lists, before the shells are placed on atoms.
#include <map>
#include <string>
#include <vector>

namespace nnvmc::scf {

/// Highest shell angular momentum of an orbital basis: libint2's four-centre ERIs (l = 5, H here).
constexpr int kOrbitalMaxL = 5;
/// Highest of an auxiliary (fitting) basis: the single centre of libint2's three-centre ERIs
/// (l = 7, K here; def2-universal-JKFIT has I functions on Sc–Zn).
constexpr int kFittingMaxL = 7;

/// One segmented contracted shell as written in a basis file: φ(r) = Σ_k c_k r^l e^{-α_k r²}
/// (coefficients refer to normalised primitives, as in the file).
struct ShellTemplate {
  int l = 0;                          ///< angular momentum (0 = s, 1 = p, ...)
  std::vector<double> exponents;      ///< α_k (bohr⁻²)
  std::vector<double> coefficients;   ///< c_k, same length as exponents
};

/// The contents of one basis set file.
struct BasisLibrary {
  std::string source;                                  ///< file path (for messages)
  bool spherical = true;  ///< pure d/f/... shells (SPHERICAL) or Cartesian (CARTESIAN, or neither: NWChem's default)
  std::map<int, std::vector<ShellTemplate>> elements;  ///< shells per atomic number, in file order
};

/// Parses NWChem-format basis text. General contractions (several coefficient columns)
/// are split into one segmented shell per column, keeping only primitives with a nonzero
/// coefficient; "SP"/"L" shells become an s and a p shell. `where` names the source in
/// messages. @throws InputError naming the line for malformed input, a contraction whose
/// coefficients are all zero, or a shell type beyond the integral library's angular momentum.
/// `max_l`: the highest angular momentum accepted (kOrbitalMaxL: libint2's four-centre ERIs;
/// auxiliary bases for density fitting go to kFittingMaxL, its three-centre ERIs' single centre).
BasisLibrary parse_nwchem_basis(const std::string& text, const std::string& where, int max_l = kOrbitalMaxL);

/// Reads and parses an NWChem-format basis file. @throws InputError if it cannot be read.
BasisLibrary read_nwchem_basis(const std::string& path, int max_l = kOrbitalMaxL);

}  // namespace nnvmc::scf
