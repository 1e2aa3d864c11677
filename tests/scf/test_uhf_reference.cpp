/// UHF energies against Psi4 (../shared/reference/uhf.csv).
#include <gtest/gtest.h>

#include "core/system.hpp"
#include "scf/basis.hpp"
#include "scf/scf.hpp"
#include "test_helpers.hpp"

using namespace nnvmc;
using namespace nnvmc::scf;

TEST(Uhf, AtomEnergiesMatchPsi4To1e8) {
  const auto rows = scftest::read_csv_rows(scftest::kReference + "/uhf.csv");
  ASSERT_FALSE(rows.empty());
  for (const auto& row : rows) {
    System s = load_molecule(row.at(0), scftest::kMolecules);
    s.charge = std::stoi(row.at(2));
    s.spin = std::stoi(row.at(3));
    const ScfResult r = run_uhf(s, make_basis(row.at(1), s));
    EXPECT_TRUE(r.converged) << row[0];
    EXPECT_EQ(r.n_alpha - r.n_beta, s.spin);
    EXPECT_NEAR(r.energy, std::stod(row.at(4)), 1e-8) << row[0] << "/" << row[1];
  }
}

TEST(Uhf, HydrogenAtomInLargeBasisApproachesMinusOneHalf) {
  const System h = load_molecule("h", scftest::kMolecules);
  const double e_dz = run_uhf(h, make_basis("cc-pvdz", h)).energy;
  const double e_tz = run_uhf(h, make_basis("cc-pvtz", h)).energy;
  EXPECT_GT(e_dz, -0.5);  // variational
  EXPECT_GT(e_tz, -0.5);
  EXPECT_LT(e_tz, e_dz);
  EXPECT_NEAR(e_tz, -0.5, 1e-3);
}

TEST(Uhf, OpenShellOrbitalsAreOrthonormalAndSpinCountsAreRight) {
  const System li = load_molecule("li", scftest::kMolecules);
  const ScfResult r = run_uhf(li, make_basis("6-31g", li));
  EXPECT_EQ(r.n_alpha, 2);
  EXPECT_EQ(r.n_beta, 1);
  EXPECT_NEAR(r.d_alpha.cwiseProduct(r.overlap).sum(), 2.0, 1e-10);
  EXPECT_NEAR(r.d_beta.cwiseProduct(r.overlap).sum(), 1.0, 1e-10);
  const Eigen::MatrixXd CtSC = r.c_beta.transpose() * r.overlap * r.c_beta;
  EXPECT_LT((CtSC - Eigen::MatrixXd::Identity(r.n_mo, r.n_mo)).cwiseAbs().maxCoeff(), 1e-10);
}
