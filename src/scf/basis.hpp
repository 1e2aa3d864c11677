#pragma once
/// @file basis.hpp
/// A Gaussian basis placed on the atoms of a molecule: libint2 shells plus the
/// bookkeeping (shell → first function, shell → atom) that integral and orbital code need.
#include <libint2/shell.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core/system.hpp"
#include "scf/basis_file.hpp"

namespace nnvmc::scf {

/// How to look up and build a basis.
struct BasisOptions {
  std::string directory;            ///< folder of basis files; empty = default_basis_dir()
  std::optional<bool> spherical;    ///< force pure (true) or Cartesian (false) shells; unset = as the file says
  int max_l = kOrbitalMaxL;         ///< highest shell l accepted (auxiliary bases: kFittingMaxL)
};

/// Shells on atoms, in atom order and, per atom, in basis-file order. Functions are numbered
/// shell by shell; within a shell libint2's standard order (Cartesian: xx, xy, xz, yy, yz, zz;
/// spherical: m = −l … l).
class BasisSet {
 public:
  BasisSet() = default;
  /// Takes shells (with normalisation already embedded) and the atom index of each.
  BasisSet(std::string name, std::vector<libint2::Shell> shells, std::vector<int> shell_atoms);

  const std::string& name() const { return name_; }                     ///< e.g. "cc-pvdz"
  const std::vector<libint2::Shell>& shells() const { return shells_; } ///< libint2 shells
  std::size_t n_shells() const { return shells_.size(); }               ///< number of shells
  std::size_t n_functions() const { return n_functions_; }              ///< number of basis functions
  /// First function index of each shell; size n_shells() + 1 (the last entry is n_functions()).
  const std::vector<std::size_t>& shell_offsets() const { return offsets_; }
  const std::vector<int>& shell_atoms() const { return shell_atoms_; }   ///< atom index of each shell
  int max_l() const { return max_l_; }                                  ///< highest angular momentum
  std::size_t max_nprim() const { return max_nprim_; }                  ///< most primitives in one shell

 private:
  std::string name_;
  std::vector<libint2::Shell> shells_;
  std::vector<int> shell_atoms_;
  std::vector<std::size_t> offsets_{0};
  std::size_t n_functions_ = 0;
  int max_l_ = 0;
  std::size_t max_nprim_ = 0;
};

/// Folder of the shipped basis files: $NNVMC_BASIS_DIR when set, else data/basis of the
/// source tree.
std::string default_basis_dir();

/// File name of a basis: lower case without blanks, '*' spelled 's' and '+' spelled 'p', a
/// trailing "(d)" or "(d,p)" read as "*" or "**" ("6-31G*" and "6-31G(d)" → "6-31gs.nw", "6-31+G*" → "6-31pgs.nw").
std::string basis_file_name(const std::string& basis_name);

/// Whether `basis_name` is the path of a basis file rather than the name of a shipped basis:
/// it contains a '/' or ends in ".nw" (NWChem format, as the Basis Set Exchange exports it).
bool is_basis_path(const std::string& basis_name);

/// The file of the basis `basis_name` (a shipped basis, or the path of a file).
/// @throws InputError for an unknown basis (naming the file looked for and the available ones)
/// or a basis file that is not there
std::string basis_file_path(const std::string& basis_name, const BasisOptions& options = {});

/// The text of the basis file of `basis_name`, each line prefixed with "basis file NAME line N: "
/// (what ranks compare: each reads its own copy, e.g. on its node).
/// @throws InputError as basis_file_path
std::string basis_file_lines(const std::string& basis_name, const BasisOptions& options = {});

/// Under mpirun, every rank must have read the same molecule and basis file (each reads its own
/// copy, e.g. on its node): a geometry 0.001 Å off on one rank ended as "CCSD did not converge",
/// a basis file lacking a shell as "MPI error in broadcast". Collective (nothing to do in one
/// process). @throws InputError naming the rank and its first differing line
void require_same_molecule_and_basis_on_all_ranks(const System& system, const std::string& basis_name);

/// Builds the basis `basis_name` (e.g. "cc-pVDZ", "6-31G*", or a file "my/basis.nw", relative
/// to the working directory) on the atoms of `system`.
/// @throws InputError for an unknown basis (naming the file looked for and the available
/// ones), a basis file that is not there or is malformed (naming its line), or an element
/// the basis does not cover.
BasisSet make_basis(const std::string& basis_name, const System& system,
                    const BasisOptions& options = {});

/// Names of the bases available in `directory`, sorted by file name: as each file's Basis Set
/// Exchange header spells it ("6-31G*", "cc-pVDZ"), else the file's stem. Each name finds its file
/// (files no name leads to, e.g. "My+Basis.nw", are left out: they are read by their path).
std::vector<std::string> available_bases(const std::string& directory);

/// available_bases(directory) joined with ", " ("none" when there are none), for messages.
std::string available_bases_list(const std::string& directory);

}  // namespace nnvmc::scf
