/// ERI units: generally contracted shells computed from their shared primitives give the
/// integrals libint2 gives shell by shell.
#include <gtest/gtest.h>

#include <libint2.hpp>

#include <cmath>

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

/// Largest difference between every unit quartet's block and libint2's shell quartets
/// (both without primitive screening), and the largest integral.
std::pair<double, double> worst_unit_error(const BasisSet& basis, double precision = 0, double ref_precision = 0) {
  ensure_libint_initialized();
  const auto units = eri_units(basis);
  EriUnitEngine engine(basis, precision);
  libint2::Engine ref(libint2::Operator::coulomb, basis.max_nprim(), basis.max_l(), 0, ref_precision);
  const auto& sh = basis.shells();
  double err = 0, biggest = 0;
  for (const EriUnit& a : units)
    for (const EriUnit& b : units)
      for (const EriUnit& c : units)
        for (const EriUnit& d : units) {
          const double* v = engine.compute(a, b, c, d);
          const std::size_t nb = b.n_functions(), nc = c.n_functions(), nd = d.n_functions();
          for (std::size_t sa = 0; sa < a.n_shells; ++sa)
            for (std::size_t sb = 0; sb < b.n_shells; ++sb)
              for (std::size_t sc = 0; sc < c.n_shells; ++sc)
                for (std::size_t sd = 0; sd < d.n_shells; ++sd) {
                  ref.compute(sh[a.first_shell + sa], sh[b.first_shell + sb], sh[c.first_shell + sc],
                              sh[d.first_shell + sd]);
                  const double* r = ref.results()[0];
                  const std::size_t ma = a.shell_size, mb = b.shell_size, mc = c.shell_size, md = d.shell_size;
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
