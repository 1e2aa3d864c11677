/// RHF energies against Psi4 (../shared/reference/ccsd.csv), one test per row.
#include <gtest/gtest.h>

#include <filesystem>


#include "core/system.hpp"
#include "scf/basis.hpp"
#include "scf/scf.hpp"
#include "test_helpers.hpp"

using namespace nnvmc;
using namespace nnvmc::scf;

namespace {

struct RhfCase {
  std::string molecule, basis;
  int n_basis;
  double e_nuc, e_rhf;
};

std::vector<RhfCase> rhf_cases() {
  std::vector<RhfCase> cases;
  for (const auto& r : scftest::read_csv_rows(scftest::kReference + "/ccsd.csv"))
    cases.push_back({r.at(0), r.at(1), std::stoi(r.at(2)), std::stod(r.at(3)), std::stod(r.at(4))});
  return cases;
}

std::string case_name(const ::testing::TestParamInfo<RhfCase>& info) {
  std::string s = info.param.molecule + "_" + info.param.basis;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

class RhfReference : public ::testing::TestWithParam<RhfCase> {};

}  // namespace

TEST_P(RhfReference, EnergyMatchesPsi4To1e8) {
  const RhfCase& c = GetParam();
  const System s = load_molecule(c.molecule, scftest::kMolecules);
  const BasisSet b = make_basis(c.basis, s);
  const ScfResult r = run_rhf(s, b);
  EXPECT_TRUE(r.converged);
  EXPECT_EQ(r.n_basis, c.n_basis);
  EXPECT_NEAR(r.e_nuc, c.e_nuc, 1e-9);
  EXPECT_NEAR(r.energy, c.e_rhf, 1e-8);
  // The orbitals are orthonormal in the S metric and the density holds n/2 electrons per spin.
  const Eigen::MatrixXd CtSC = r.c_alpha.transpose() * r.overlap * r.c_alpha;
  EXPECT_LT((CtSC - Eigen::MatrixXd::Identity(r.n_mo, r.n_mo)).cwiseAbs().maxCoeff(), 1e-10);
  EXPECT_NEAR(r.d_alpha.cwiseProduct(r.overlap).sum(), r.n_alpha, 1e-10);
  EXPECT_LT(r.homo(), r.lumo());
}

INSTANTIATE_TEST_SUITE_P(Psi4, RhfReference, ::testing::ValuesIn(rhf_cases()), case_name);

namespace {

class WaterClusterReference : public ::testing::TestWithParam<std::vector<std::string>> {};

}  // namespace

// Spread-out clusters exercise Schwarz screening: bounds must not be screened to zero.
TEST_P(WaterClusterReference, EnergyMatchesPsi4To1e8) {
  const auto& row = GetParam();  // n, basis, n_basis, e_rhf, e_ccsd
  const System s = scftest::water_cluster(std::stoi(row.at(0)));
  const BasisSet b = make_basis(row.at(1), s);
  EXPECT_EQ(b.n_functions(), std::stoul(row.at(2)));
  EXPECT_NEAR(run_rhf(s, b).energy, std::stod(row.at(3)), 1e-8);
}

INSTANTIATE_TEST_SUITE_P(Psi4, WaterClusterReference,
                         ::testing::ValuesIn(scftest::read_csv_rows(scftest::kReference + "/water_clusters.csv")),
                         [](const auto& info) { return "h2o_x" + info.param.at(0); });

namespace {

class BasisReference : public ::testing::TestWithParam<std::vector<std::string>> {};

const std::string kScfTestData = std::string(NNVMC_SOURCE_DIR) + "/tests/scf/data";

}  // namespace

// Every shipped basis but STO-6G (not in Psi4 1.3.2), against Psi4 on H2O, HCl or N2, and on
// HBr, KH and the Zn atom for K–Kr (tests/scf/data/basis_reference.csv):
// the exponents and contractions, and whether d/f shells are pure or Cartesian (6-31G** Cartesian,
// 6-311G** pure, as Psi4 and Gaussian use them).
TEST_P(BasisReference, EnergyMatchesPsi4To1e8) {
  const auto& row = GetParam();  // molecule, basis, n_basis, e_rhf
  const bool shipped = std::filesystem::exists(scftest::kMolecules + "/" + row.at(0) + ".yaml");
  const System s = load_molecule(row.at(0), shipped ? scftest::kMolecules : kScfTestData);
  const BasisSet b = make_basis(row.at(1), s);
  EXPECT_EQ(b.n_functions(), std::stoul(row.at(2)));
  const ScfResult r = run_rhf(s, b);
  EXPECT_TRUE(r.converged);
  EXPECT_NEAR(r.energy, std::stod(row.at(3)), 1e-8);
}

INSTANTIATE_TEST_SUITE_P(Psi4, BasisReference,
                         ::testing::ValuesIn(scftest::read_csv_rows(kScfTestData + "/basis_reference.csv")),
                         [](const auto& info) {
                           std::string s = info.param.at(0) + "_" + info.param.at(1);
                           for (char& c : s) c = c == '*' ? 's' : c == '+' ? 'p' : std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return s;
                         });

TEST(Rhf, H2Sto3gTotalEnergyMatchesSzaboOstlund) {
  const ScfResult r = run_scf(load_molecule("h2", scftest::kMolecules), "sto-3g");
  EXPECT_NEAR(r.energy, -1.1167, 1e-4);  // Szabo & Ostlund §3.5.2
  EXPECT_NEAR(r.eps_alpha(0), -0.578, 1e-3);
  EXPECT_NEAR(r.eps_alpha(1), 0.670, 1e-3);
}

TEST(Rhf, GuessDirectBuildAndUhfDoNotChangeTheClosedShellEnergy) {
  const System s = load_molecule("h2o", scftest::kMolecules);
  const BasisSet b = make_basis("6-31g*", s);
  const double e_sad = run_rhf(s, b).energy;
  ScfOptions core;
  core.guess = ScfGuess::core;
  EXPECT_NEAR(run_rhf(s, b, core).energy, e_sad, 1e-9);
  ScfOptions direct;
  direct.jk.max_incore_mb = 0;
  direct.jk.integrals.threads = 1;
  EXPECT_NEAR(run_rhf(s, b, direct).energy, e_sad, 1e-9);
  const ScfResult u = run_uhf(s, b);
  EXPECT_NEAR(u.energy, e_sad, 1e-9);
  ScfOptions shifted;
  shifted.level_shift = 0.5;
  shifted.diis_size = 0;
  shifted.max_iterations = 300;
  EXPECT_NEAR(run_rhf(s, b, shifted).energy, e_sad, 1e-9);
}

// Cholesky J/K (nnvmc scf --cholesky TAU): RHF and UHF energies approach the exact-ERI ones as
// tau shrinks (H2O/cc-pVDZ measured: 2.5e-6 Eh at 1e-4, 4e-8 at 1e-6, 8e-9 at 1e-8).
TEST(Rhf, CholeskyEnergiesApproachTheExactEnergy) {
  const System s = load_molecule("h2o", scftest::kMolecules);
  const BasisSet b = make_basis("cc-pvdz", s);
  const double exact = run_rhf(s, b).energy;
  ScfOptions o;
  o.jk.cholesky_tau = 1e-4;
  const double loose = run_rhf(s, b, o).energy;
  o.jk.cholesky_tau = 1e-8;
  const double tight = run_rhf(s, b, o).energy;
  EXPECT_LT(std::abs(tight - exact), 1e-7);
  EXPECT_LT(std::abs(tight - exact), std::abs(loose - exact));
  EXPECT_LT(std::abs(loose - exact), 1e-4);
  const System li = load_molecule("li", scftest::kMolecules);  // doublet: UHF
  const BasisSet bl = make_basis("cc-pvdz", li);
  EXPECT_NEAR(run_uhf(li, bl, o).energy, run_uhf(li, bl).energy, 1e-7);
}

// A diffuse basis on close atoms: an H8 chain at 0.5 Å in aug-cc-pVDZ has overlap eigenvalues
// down to 7e-12. The combinations below Psi4's threshold (1e-7, the default; it was 1e-8) are
// dropped, four as in Psi4, and the energy is Psi4's (scf_type pk, the shipped basis's
// contraction given to Psi4: −3.0745354152; with s_tolerance 1e-6, seven dropped, −3.0738489280).
// The combination kept at 1.8e-7 gives the orbitals AO coefficients ~800, which amplify the J/K
// builds' rounding: with full builds to the end the energy hovered ±5e-10 between iterations and
// the SCF converged or not with the thread count (not in 100 iterations with 2); with incremental
// builds near convergence it converges in ~12 with any, also keeping the combination at 5e-8
// that 1e-8 keeps.
TEST(Rhf, NearlyDependentDiffuseBasisDropsWhatPsi4DropsAndConverges) {
  System chain;
  for (int i = 0; i < 8; ++i) chain.atoms.push_back({1, {0.0, 0.0, 0.5 * i * kBohrPerAngstrom}});
  const BasisSet basis = make_basis("aug-cc-pvdz", chain);
  for (const int threads : {1, 2, 3}) {
    ScfOptions standard;
    standard.jk.integrals.threads = threads;
    const ScfResult r = run_rhf(chain, basis, standard);
    EXPECT_TRUE(r.converged);
    EXPECT_LT(r.iterations, 30) << threads << " threads";
    EXPECT_EQ(r.n_basis - r.n_mo, 4);
    EXPECT_NEAR(r.energy, -3.0745354152, 5e-9) << threads << " threads";
  }
  ScfOptions fewer;
  fewer.lindep_threshold = 1e-6;
  const ScfResult f = run_rhf(chain, basis, fewer);
  EXPECT_EQ(f.n_basis - f.n_mo, 7);
  EXPECT_NEAR(f.energy, -3.0738489280, 1e-9);
  ScfOptions more;
  more.lindep_threshold = 1e-8;
  more.jk.integrals.threads = 2;
  const ScfResult m = run_rhf(chain, basis, more);
  EXPECT_EQ(m.n_basis - m.n_mo, 3);
  EXPECT_NEAR(m.energy, -3.0750525766, 5e-9);
}
