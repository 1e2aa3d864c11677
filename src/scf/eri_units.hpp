#pragma once
/// @file eri_units.hpp
/// ERIs of generally contracted basis sets from their shared primitives.
///
/// Correlation-consistent and other generally contracted basis sets give several contracted
/// shells of one atom and angular momentum the same primitives: carbon's three cc-pVDZ s shells
/// use 19 primitive rows over 9 exponents, iron's six use 101 over 20. libint2 contracts one
/// shell at a time, so a shell quartet of such shells recomputes every shared primitive quartet
/// once per contracted quartet (Fe (ss|ss): 625 x 20⁴). An EriUnit groups those shells; a unit
/// quartet is computed once from its primitive quartets and contracted to all its shell quartets
/// in four one-index steps. Shells that share nothing stay units of their own and go to libint2
/// as before.
#include <Eigen/Dense>
#include <libint2/shell.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "scf/basis.hpp"

namespace libint2 {
struct ShellPair;
}

namespace nnvmc::scf {

/// Consecutive shells of one atom with the same l and the same primitives (a general
/// contraction), or one shell. Their functions are contiguous: function s·shell_size + μ of
/// the unit is function μ of its shell s.
struct EriUnit {
  std::size_t first_shell = 0;     ///< its shells are [first_shell, first_shell + n_shells)
  std::size_t n_shells = 1;
  std::size_t first_function = 0;  ///< first basis function of its first shell
  std::size_t shell_size = 0;      ///< functions per shell (2l+1, or (l+1)(l+2)/2 Cartesian)
  /// What libint2 computes: the unit's distinct primitives as normalised one-primitive shells
  /// (general), or the one contracted shell itself.
  std::vector<libint2::Shell> parts;
  /// [parts, n_shells]: contracted shell s = Σ_i coeff(i, s) · part i ([[1]] for one shell).
  Eigen::MatrixXd coeff;
  bool from_primitives = false;  ///< parts are primitives (else the one shell)

  std::size_t n_functions() const { return n_shells * shell_size; }
};

/// The basis's shells grouped into units, in shell order (every shell in exactly one unit).
/// Shells are grouped when they share primitives and the group has at most half as many
/// distinct primitives as its shells have together (below that, libint2's own contraction loop
/// is cheaper than one call per primitive quartet).
std::vector<EriUnit> eri_units(const BasisSet& basis);

/// The unit of one shell alone, computed as `units` compute it (from the primitives of its
/// unit when that unit is general: the integrals then agree to rounding with the unit's).
EriUnit single_shell_unit(const BasisSet& basis, const std::vector<EriUnit>& units, std::size_t shell);

/// A unit of one shell of any basis (e.g. an auxiliary one) whose first function is first_function.
EriUnit lone_shell_unit(const libint2::Shell& shell, std::size_t first_function);

/// Unit-quartet ERIs on one thread (one per thread: it owns a libint2 engine and buffers).
class EriUnitEngine {
 public:
  /// For the quartets of `units` (eri_units(basis), or single_shell_unit's of them): libint2's
  /// engine is sized for their parts' primitives (1 for units from primitives; a per-thread
  /// engine sized for Fe's 20-primitive shells held 20⁴ primitive-quartet records).
  /// @param precision libint2's primitive screening precision (0: none)
  EriUnitEngine(const BasisSet& basis, const std::vector<EriUnit>& units, double precision);
  /// Three-centre integrals (P|ab) for density fitting: compute(P, lone_shell_unit(Shell::unit(), 0),
  /// a, b) with P an auxiliary shell's unit (libint2's xs_xx); max_nprim and max_l over both bases.
  static EriUnitEngine three_center(std::size_t max_nprim, int max_l, double precision);
  ~EriUnitEngine();
  EriUnitEngine(EriUnitEngine&&) noexcept;
  EriUnitEngine(const EriUnitEngine&) = delete;
  EriUnitEngine& operator=(const EriUnitEngine&) = delete;

  /// (ab|cd) over the units' functions, row-major [a.n_functions(), b…, c…, d…], valid until the
  /// next call; nullptr when libint2 screened every primitive quartet out (the block is zero).
  /// bra/ket: libint2 shell-pair data of (a, b) and (c, d), used when neither unit of the pair is
  /// from primitives (nullptr: computed on the fly).
  const double* compute(const EriUnit& a, const EriUnit& b, const EriUnit& c, const EriUnit& d,
                        const libint2::ShellPair* bra = nullptr, const libint2::ShellPair* ket = nullptr);

 private:
  EriUnitEngine();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Schwarz bounds per unit pair, max over the pair's functions of sqrt|(pq|pq)|, [units, units],
/// computed without primitive screening (as schwarz_bounds). per_shell, when given, receives
/// the same bounds per shell pair [n_shells, n_shells] (what schwarz_bounds returns).
/// With same_atom_unbounded, pairs of units on one atom are not computed but set to +inf (such
/// pairs are never negligible, and on a heavy atom they are most of the bounds' cost: Fe
/// cc-pVDZ's (ss|ss) unit is 20⁴ primitive quartets); for callers that only compare a bound
/// against a threshold (density fitting).
Eigen::MatrixXd unit_schwarz_bounds(const BasisSet& basis, const std::vector<EriUnit>& units, int threads,
                                    Eigen::MatrixXd* per_shell = nullptr, bool same_atom_unbounded = false);

}  // namespace nnvmc::scf
