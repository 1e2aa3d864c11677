/// Conventional CCSD and CCSD(T) against Psi4 (../shared/reference/ccsd.csv), all-electron.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "ccsd/driver.hpp"
#include "reference.hpp"

namespace {

nnvmc::ccsd::CcsdRun run(const std::string& mol, const std::string& basis, bool triples, bool frozen = false) {
  nnvmc::ccsd::CcsdRunOptions o;
  o.basis = basis;
  o.frozen_core = frozen;
  o.ccsd.triples = triples;
  o.ccsd.plan.cost = nnvmc::batching::CostModel{};
  return nnvmc::ccsd::run_ccsd(nnvmc::load_molecule(mol, nnvmc::default_molecules_dir()), o);
}

void expect_reference(const std::string& mol, const std::string& basis, bool triples) {
  SCOPED_TRACE(mol + "/" + basis);
  const auto ref = nnvmc::test::ccsd_reference(mol, basis);
  const auto r = run(mol, basis, triples);
  EXPECT_NEAR(r.rhf.energy, ref.e_rhf, 1e-7);
  EXPECT_NEAR(r.cc.e_ccsd, ref.e_ccsd, 1e-7);
  if (triples) {
    EXPECT_NEAR(r.cc.e_ccsd_t, ref.e_ccsd_t, 1e-7);
  }
}

}  // namespace

TEST(ReferenceEnergies, WaterSto3gCcsdAndTriplesMatchPsi4) { expect_reference("h2o", "sto-3g", true); }
TEST(ReferenceEnergies, Water631gCcsdAndTriplesMatchPsi4) { expect_reference("h2o", "6-31g", true); }
TEST(ReferenceEnergies, WaterCcpvdzCcsdAndTriplesMatchPsi4) { expect_reference("h2o", "cc-pvdz", true); }
TEST(ReferenceEnergies, HydrogenMoleculeIsExactWithoutTriples) { expect_reference("h2", "cc-pvdz", true); }
TEST(ReferenceEnergies, LithiumHydrideCcpvdzMatchesPsi4) { expect_reference("lih", "cc-pvdz", true); }
TEST(ReferenceEnergies, MethaneCcpvdzCcsdMatchesPsi4) { expect_reference("ch4", "cc-pvdz", false); }

TEST(ReferenceEnergies, FrozenCoreRaisesTheEnergyByTheCorePairCorrelation) {
  const auto all = nnvmc::test::ccsd_reference("h2o", "cc-pvdz");
  const auto fc = run("h2o", "cc-pvdz", true, true);
  EXPECT_EQ(fc.n_frozen, 1);
  // the O 1s pair contributes a small negative correlation energy (a few mEh in cc-pVDZ)
  EXPECT_GT(fc.cc.e_ccsd, all.e_ccsd);
  EXPECT_LT(fc.cc.e_ccsd - all.e_ccsd, 5e-3);
  EXPECT_GT(fc.cc.e_ccsd_t, all.e_ccsd_t);
  EXPECT_NEAR(fc.rhf.energy, all.e_rhf, 1e-7);
  // Psi4 1.3.2, freeze_core true: psi4_reference.py configs/molecules/h2o.yaml cc-pvdz --method 'ccsd(t)' --frozen-core
  EXPECT_NEAR(fc.cc.e_ccsd, -76.23801445606061, 1e-7);
  EXPECT_NEAR(fc.cc.e_ccsd_t, -76.24105226008528, 1e-7);
}

// The T1 and D1 diagnostics of H2O/cc-pVDZ against Psi4 1.7's ccenergy (scf_type pk, the
// geometry of configs/molecules/h2o.yaml): T1Diag 0.005256, D1Diag 0.011092.
TEST(ReferenceEnergies, WaterT1AndD1DiagnosticsMatchPsi4) {
  const auto r = run("h2o", "cc-pvdz", false);
  EXPECT_NEAR(r.cc.t1_diagnostic, 0.005256, 1e-6);
  EXPECT_NEAR(r.cc.d1_diagnostic, 0.011092, 1e-6);
}
