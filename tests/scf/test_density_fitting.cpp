/// Density-fitted J/K (scf/density_fitting.hpp) against Psi4 1.3.2's scf_type df with the same
/// auxiliary basis (Psi4 names def2-universal-JKFIT def2-qzvpp-jkfit), and the fit's own checks.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include "core/errors.hpp"
#include "core/system.hpp"
#include "scf/basis.hpp"
#include "scf/basis_file.hpp"
#include "scf/density_fitting.hpp"
#include "scf/guess.hpp"
#include "scf/scf.hpp"
#include "test_helpers.hpp"

using namespace nnvmc;
using namespace nnvmc::scf;

namespace {

ScfOptions fitted(const System& s, const std::string& aux = kDefaultFittingBasis) {
  ScfOptions o;
  o.jk.integrals.threads = 1;
  o.jk.df_basis = std::make_shared<const BasisSet>(make_fitting_basis(aux, s));
  return o;
}

}  // namespace

// H2O/cc-pVDZ: Psi4 (scf_type df, df_basis_scf def2-qzvpp-jkfit, e_convergence 1e-11,
// bench/psi4_hf.py) −76.02673318684172; its exact-ERI (pk) energy is 32 µEh lower, and so is ours.
TEST(DensityFitting, RhfOfWaterMatchesPsi4DfWithTheSameAuxiliaryBasis) {
  const System h2o = load_molecule("h2o", scftest::kMolecules);
  const auto df = run_rhf(h2o, make_basis("cc-pvdz", h2o), fitted(h2o));
  ScfOptions exact_options;
  exact_options.jk.integrals.threads = 1;
  const auto exact = run_rhf(h2o, make_basis("cc-pvdz", h2o), exact_options);
  EXPECT_NEAR(df.energy, -76.02673318684172, 1e-8);
  EXPECT_NEAR(exact.energy, -76.02676567309771, 1e-8);  // Psi4 pk
  EXPECT_GT(df.energy - exact.energy, 1e-5);            // the fit is on, and its error is the usual size
  EXPECT_LT(df.energy - exact.energy, 1e-4);
}

// An open-shell heavy atom: def2-universal-JKFIT puts I functions (l = 6, past the four-centre
// integral limit) on Fe, and the SAD guess fits each atom with its own auxiliary functions.
// Psi4 (df, def2-qzvpp-jkfit, UHF quintet, its SAD guess): −1262.3839990183828.
TEST(DensityFitting, UhfOfIronWithIFittingFunctionsMatchesPsi4Df) {
  System fe;
  fe.name = "fe";
  fe.atoms = {Atom{26, {0, 0, 0}}};
  fe.spin = 4;
  auto o = fitted(fe);
  o.guess = ScfGuess::sad;  // (Psi4's solution; the core guess finds one 67 mEh lower)
  o.stability = StabilityMode::off;
  int max_l = 0;
  for (const auto& sh : o.jk.df_basis->shells()) max_l = std::max(max_l, sh.contr[0].l);
  EXPECT_EQ(max_l, 6);
  const auto r = run_uhf(fe, make_basis("cc-pvdz", fe), o);
  EXPECT_NEAR(r.energy, -1262.3839990183828, 1e-8);
}

// A metric with nearly dependent auxiliary functions (two s exponents 1e-7 apart) fits through
// its eigenvectors with the dependent direction dropped: the energy is that of the basis without
// the near-duplicate (the Cholesky route would divide by a pivot of ~1e-14).
TEST(DensityFitting, NearlyDependentAuxiliaryFunctionsAreDroppedNotDividedBy) {
  const auto dir = std::filesystem::temp_directory_path() / "nnvmc_df_aux_test";
  std::filesystem::create_directories(dir);
  const std::string base = "BASIS \"ao basis\" SPHERICAL\nH S\n 8.0 1.0\nH S\n 2.0 1.0\nH S\n 0.5 1.0\nH P\n 1.5 1.0\n"
                           "H D\n 1.0 1.0\n";
  std::ofstream(dir / "plain.nw") << base << "END\n";
  std::ofstream(dir / "dup.nw") << base << "H S\n 2.0000002 1.0\nEND\n";
  System h2;
  h2.atoms = {Atom{1, {0, 0, 0}}, Atom{1, {0, 0, 1.4}}};
  const auto plain = run_rhf(h2, make_basis("cc-pvdz", h2), fitted(h2, (dir / "plain.nw").string()));
  const auto dup = run_rhf(h2, make_basis("cc-pvdz", h2), fitted(h2, (dir / "dup.nw").string()));
  EXPECT_TRUE(std::isfinite(dup.energy));
  EXPECT_NEAR(dup.energy, plain.energy, 1e-9);
  std::filesystem::remove_all(dir);
}

// Fitting files may hold shells to l = 7 (the three-centre integrals' single centre); orbital
// bases stop at l = 5, as before.
TEST(DensityFitting, FittingBasisFilesTakeShellsBeyondTheOrbitalLimit) {
  const std::string text = "BASIS\nH I\n 1.0 1.0\nH K\n 2.0 1.0\nEND\n";
  const auto lib = parse_nwchem_basis(text, "aux.nw", kFittingMaxL);
  EXPECT_EQ(lib.elements.at(1).back().l, 7);
  EXPECT_THROW(parse_nwchem_basis(text, "aux.nw"), InputError);
}

// A fitting basis without s functions on an atom cannot fit its charge (LiH with H fitted by h
// functions alone converged to −10.27 Eh against HF's −7.98, exit 0): refused, naming the atom.
TEST(DensityFitting, AFittingBasisWithoutSFunctionsOnAnAtomIsRefused) {
  const auto dir = std::filesystem::temp_directory_path() / "nnvmc_df_no_s_test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "aux.nw") << "BASIS \"ao basis\" SPHERICAL\nH P\n 1.0 1.0\nH H\n 2.0 1.0\n"
                                   "Li S\n 1.0 1.0\nEND\n";
  const System lih = load_molecule("lih", scftest::kMolecules);
  try {
    make_fitting_basis((dir / "aux.nw").string(), lih);
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("has no s functions for atom 2 (H)"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

// Cholesky vectors and density fitting are two ways to the three-index J/K: asked together, an error.
TEST(DensityFitting, CholeskyAndDensityFittingExcludeEachOther) {
  const System h2o = load_molecule("h2o", scftest::kMolecules);
  auto o = fitted(h2o);
  o.jk.cholesky_tau = 1e-6;
  EXPECT_THROW(run_rhf(h2o, make_basis("sto-3g", h2o), o), InputError);
}

// The three-centre integrals are written by one task per shell pair: the vectors are the same
// with one thread or two.
TEST(DensityFitting, FittedVectorsAreTheSameWithOneOrTwoThreads) {
  const System h2o = load_molecule("h2o", scftest::kMolecules);
  const BasisSet basis = make_basis("cc-pvdz", h2o);
  const BasisSet aux = make_fitting_basis(kDefaultFittingBasis, h2o);
  IntegralOptions one, two;
  one.threads = 1;
  two.threads = 2;
  const Eigen::MatrixXd b1 = density_fitted_pairs(basis, aux, one), b2 = density_fitted_pairs(basis, aux, two);
  ASSERT_EQ(b1.rows(), 24 * 25 / 2);
  ASSERT_EQ(b1.cols(), 113);
  EXPECT_LT((b1 - b2).cwiseAbs().maxCoeff(), 1e-13);
  // and K's per-thread rank updates sum to the one-thread K: the same SCF energy
  auto o1 = fitted(h2o), o2 = fitted(h2o);
  o2.jk.integrals.threads = 2;
  EXPECT_NEAR(run_rhf(h2o, basis, o1).energy, run_rhf(h2o, basis, o2).energy, 1e-10);
}

// The stability analysis runs on the fitted J/K too: stretched H2's UHF from the symmetric
// start follows its instability to the broken-symmetry solution, within the fit's error of the
// exact-ERI one.
TEST(DensityFitting, StretchedH2UhfFollowsItsInstabilityWithFittedIntegrals) {
  System h2;
  h2.atoms = {Atom{1, {0, 0, 0}}, Atom{1, {0, 0, 4.0}}};
  const BasisSet basis = make_basis("cc-pvdz", h2);
  auto df = fitted(h2);
  df.stability = StabilityMode::follow;
  ScfOptions exact;
  exact.jk.integrals.threads = 1;
  exact.stability = StabilityMode::follow;
  const auto r_df = run_uhf(h2, basis, df), r_exact = run_uhf(h2, basis, exact);
  EXPECT_GT(r_exact.s_squared, 0.5);  // broken symmetry (RHF-like: 0)
  EXPECT_GT(r_df.s_squared, 0.5);
  EXPECT_NEAR(r_df.energy, r_exact.energy, 1e-4);
  EXPECT_GE(r_df.stability_eigenvalue, -df.stability_threshold);
}

// The SAD guess's atoms are fitted with their own auxiliary shells (O's for O, H's for H): the
// fitted guess is the exact one to the fit's accuracy (another atom's shells would not be).
TEST(DensityFitting, TheSadGuessFitsEachAtomWithItsOwnAuxiliaryFunctions) {
  const System h2o = load_molecule("h2o", scftest::kMolecules);
  const BasisSet basis = make_basis("cc-pvdz", h2o);
  ScfOptions exact;
  exact.jk.integrals.threads = 1;
  const Eigen::MatrixXd d_exact = sad_density(h2o, basis, exact, nullptr);
  const Eigen::MatrixXd d_fitted = sad_density(h2o, basis, fitted(h2o), nullptr);
  EXPECT_LT((d_exact - d_fitted).cwiseAbs().maxCoeff(), 1e-3);
  EXPECT_GT((d_exact - d_fitted).cwiseAbs().maxCoeff(), 0.0);  // (fitted, not the exact ERIs)
}

// A fitting basis built on other centres (another geometry) is refused, not used.
TEST(DensityFitting, AnAuxiliaryBasisOnOtherCentresIsRefused) {
  System h2, moved;
  h2.atoms = {Atom{1, {0, 0, 0}}, Atom{1, {0, 0, 1.4}}};
  moved.atoms = {Atom{1, {0, 0, 0}}, Atom{1, {0, 0, 1.5}}};
  ScfOptions o;
  o.jk.df_basis = std::make_shared<const BasisSet>(make_fitting_basis(kDefaultFittingBasis, moved));
  EXPECT_THROW(run_rhf(h2, make_basis("cc-pvdz", h2), o), Error);
}
