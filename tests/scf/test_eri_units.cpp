/// ERI units: generally contracted shells computed from their shared primitives give the
/// integrals libint2 gives shell by shell.
#include <gtest/gtest.h>

#include <libint2.hpp>

#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/system.hpp"
#include "scf/basis.hpp"
#include "scf/eri_units.hpp"
#include "scf/integrals.hpp"
#include "test_helpers.hpp"

using namespace nnvmc;
using namespace nnvmc::scf;

namespace {

System lone_atom(int Z, int spin) {
  System s;
  s.atoms = {Atom{Z, {0, 0, 0}}};
  s.spin = spin;
  return s;
}

/// Largest difference between every unit quartet's block (at `precision`) and libint2's shell
/// quartets (at `ref_precision`), and the largest integral.
/// `only`, when given, lists the unit quartets to check (indices into eri_units(basis)).
std::pair<double, double> worst_unit_error(const BasisSet& basis, double precision = 0, double ref_precision = 0,
                                           const std::vector<std::array<std::size_t, 4>>& only = {}) {
  ensure_libint_initialized();
  const auto units = eri_units(basis);
  EriUnitEngine engine(basis, units, precision);
  libint2::Engine ref(libint2::Operator::coulomb, basis.max_nprim(), basis.max_l(), 0, ref_precision);
  const auto& sh = basis.shells();
  double err = 0, biggest = 0;
  std::vector<std::array<std::size_t, 4>> quartets = only;
  if (quartets.empty())
    for (std::size_t i = 0; i < units.size(); ++i)
      for (std::size_t j = 0; j < units.size(); ++j)
        for (std::size_t k = 0; k < units.size(); ++k)
          for (std::size_t l = 0; l < units.size(); ++l) quartets.push_back({i, j, k, l});
  for (const auto& q : quartets) {
    const EriUnit &a = units[q[0]], &b = units[q[1]], &c = units[q[2]], &d = units[q[3]];
    const double* v = engine.compute(a, b, c, d);
    const std::size_t nb = b.n_functions(), nc = c.n_functions(), nd = d.n_functions();
    const std::size_t ma = a.shell_size, mb = b.shell_size, mc = c.shell_size, md = d.shell_size;
    for (std::size_t sa = 0; sa < a.n_shells; ++sa)
      for (std::size_t sb = 0; sb < b.n_shells; ++sb)
        for (std::size_t sc = 0; sc < c.n_shells; ++sc)
          for (std::size_t sd = 0; sd < d.n_shells; ++sd) {
            ref.compute(sh[a.first_shell + sa], sh[b.first_shell + sb], sh[c.first_shell + sc], sh[d.first_shell + sd]);
            const double* r = ref.results()[0];
            for (std::size_t i = 0; i < ma; ++i)
              for (std::size_t j = 0; j < mb; ++j)
                for (std::size_t k = 0; k < mc; ++k)
                  for (std::size_t l = 0; l < md; ++l) {
                    const double want = r ? r[((i * mb + j) * mc + k) * md + l] : 0.0;
                    const std::size_t row = ((sa * ma + i) * nb + sb * mb + j) * nc + sc * mc + k;
                    const double got = v ? v[row * nd + sd * md + l] : 0.0;
                    err = std::max(err, std::abs(got - want));
                    biggest = std::max(biggest, std::abs(want));
                  }
          }
  }
  return {err, biggest};
}

}  // namespace

TEST(EriUnits, GroupGeneralContractionsAndKeepEveryShellOnce) {
  // Fe cc-pVDZ: (20s,16p,8d,2f) -> [6s,5p,3d,1f], s, p and d generally contracted
  const BasisSet fe = make_basis("cc-pvdz", lone_atom(26, 4));
  const auto units = eri_units(fe);
  ASSERT_EQ(units.size(), 4u);
  const std::size_t shells[] = {6, 5, 3, 1}, primitives[] = {20, 16, 8, 1};
  std::size_t next = 0;
  for (std::size_t u = 0; u < units.size(); ++u) {
    EXPECT_EQ(units[u].first_shell, next);
    EXPECT_EQ(units[u].n_shells, shells[u]);
    EXPECT_EQ(units[u].parts.size(), primitives[u]);
    EXPECT_EQ(units[u].first_function, fe.shell_offsets()[next]);
    next += units[u].n_shells;
  }
  EXPECT_EQ(next, fe.n_shells());
  // H cc-pVDZ's two s shells share one of four exponents (5 rows): not worth one call per primitive
  const BasisSet h = make_basis("cc-pvdz", lone_atom(1, 1));
  for (const EriUnit& u : eri_units(h)) EXPECT_FALSE(u.from_primitives);
}

// Without primitive screening both ways agree to rounding; with the default precision (1e-15) the
// units stay at rounding while libint2's contracted shells drift by up to ~1e-11 (its screening
// weighs the shells' largest coefficients).
TEST(EriUnits, UnitQuartetsEqualLibintsShellQuartetsOnOneAndTwoCentres) {
  for (const double precision : {0.0, 1e-15}) {
    // Ar cc-pVDZ: (12s,8p,1d) -> [4s,3p,1d]
    const auto [err, biggest] = worst_unit_error(make_basis("cc-pvdz", lone_atom(18, 0)), precision);
    EXPECT_LT(err, 1e-13 * biggest) << "Ar cc-pVDZ, precision " << precision << ", largest integral " << biggest;
    System co;  // two centres, general s on both
    co.atoms = {Atom{6, {0, 0, 0}}, Atom{8, {0.3, -0.2, 2.13}}};
    const auto [err2, biggest2] = worst_unit_error(make_basis("cc-pvdz", co), precision);
    EXPECT_LT(err2, 1e-13 * biggest2) << "CO cc-pVDZ, precision " << precision << ", largest integral " << biggest2;
  }
}

// The d unit of a transition metal (Fe cc-pVDZ: three d shells over 8 exponents) with the s, p and
// f units, and a hand-made basis whose s unit has an exponent twice in one contraction, a shell
// whose exponents are a subset of another's and a one-primitive shell from another block, and
// whose d shells (spherical) share theirs, on two centres.
TEST(EriUnits, DUnitsRepeatedAndSubsetExponentsGiveLibintsIntegrals) {
  const BasisSet fe = make_basis("cc-pvdz", lone_atom(26, 4));  // units: s 0, p 1, d 2, f 3
  const auto [err, biggest] = worst_unit_error(fe, 1e-15, 0.0, {{2, 2, 2, 2}, {0, 2, 0, 2}, {1, 2, 0, 3}, {2, 1, 3, 2}});
  EXPECT_LT(err, 1e-13 * biggest) << "Fe cc-pVDZ d unit, largest integral " << biggest;

  const auto file = std::filesystem::temp_directory_path() / "nnvmc_units_test.nw";
  std::ofstream(file) << "BASIS \"ao basis\" SPHERICAL\n"
                         "C    S\n  100.0  0.5  0.0\n  100.0  0.3  0.0\n  10.0  0.4  0.6\n  1.0  0.2  0.5\n"
                         "C    S\n  1.0  1.0\n"
                         "C    D\n  2.0  0.6  0.0  0.3\n  0.5  0.5  1.0  0.7\n"
                         "END\n";
  System cc;
  cc.atoms = {Atom{6, {0, 0, 0}}, Atom{6, {0.4, 0.3, 1.9}}};
  const BasisSet b = make_basis(file.string(), cc);
  const auto units = eri_units(b);
  ASSERT_EQ(units.size(), 4u);  // per atom: s (3 shells, 3 exponents), d (3 shells, 2 exponents)
  EXPECT_EQ(units[0].n_shells, 3u);
  EXPECT_EQ(units[0].parts.size(), 3u);
  EXPECT_EQ(units[1].n_shells, 3u);
  EXPECT_EQ(units[1].parts.size(), 2u);
  for (const double precision : {0.0, 1e-15}) {
    const auto [e, big] = worst_unit_error(b, precision);
    EXPECT_LT(e, 1e-13 * big) << "hand-made basis, precision " << precision << ", largest integral " << big;
  }
  std::filesystem::remove(file);
}
