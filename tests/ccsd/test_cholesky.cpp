/// Cholesky-decomposed integrals converge to the conventional CCSD energy as τ shrinks.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <memory>
#include <vector>

#include "ccsd/cholesky.hpp"
#include "ccsd/driver.hpp"
#include "ccsd/mo_integrals.hpp"
#include "ccsd/rccsd.hpp"
#include "common/ccsd_fixtures.hpp"
#include "core/errors.hpp"
#include "scf/jk_builder.hpp"
#include "scf/cholesky_eri.hpp"
#include "scf/integrals.hpp"

namespace {

using nnvmc::test::water;

nnvmc::ccsd::CcsdOptions options() {
  nnvmc::ccsd::CcsdOptions o;
  o.plan.cost = nnvmc::batching::CostModel{};
  return o;
}

/// The reference: the same pivoting rule on the dense ERI matrix (from eri_full), scanning the
/// unique pairs p ≥ q in the same order (row p(p+1)/2 + q): largest residual diagonal → its shell
/// pair; pivots inside it while above max(tau, 1e-2 dmax). Returns [n², n_vec].
Eigen::MatrixXd dense_pivoted_cholesky(const nnvmc::scf::BasisSet& basis, double tau) {
  const Eigen::Index n = Eigen::Index(basis.n_functions()), nn = n * n;
  const auto full = nnvmc::scf::eri_full(basis);
  const Eigen::Map<const Eigen::MatrixXd> g(full.data(), nn, nn);  // symmetric
  std::vector<Eigen::Index> uniq;                                   // unique pair k → dense row p·n + q
  for (Eigen::Index p = 0; p < n; ++p)
    for (Eigen::Index q = 0; q <= p; ++q) uniq.push_back(p * n + q);
  Eigen::VectorXd d = g.diagonal();
  const auto& off = basis.shell_offsets();
  Eigen::MatrixXd L(nn, 0);
  while (true) {
    Eigen::Index piv = -1;
    double dmax = -1;
    for (const Eigen::Index row : uniq)
      if (d(row) > dmax) dmax = d(row), piv = row;
    if (dmax < tau) break;
    const int P = nnvmc::scf::function_to_shell(basis, std::size_t(piv / n)).first;
    const int Q = nnvmc::scf::function_to_shell(basis, std::size_t(piv % n)).first;
    while (true) {
      Eigen::Index best = -1;
      double best_d = tau;
      for (auto a = Eigen::Index(off[P]); a < Eigen::Index(off[P + 1]); ++a)
        for (auto b = Eigen::Index(off[Q]); b < Eigen::Index(off[Q + 1]) && b <= a; ++b)
          if (d(a * n + b) > best_d && d(a * n + b) > 1e-2 * dmax) best_d = d(a * n + b), best = a * n + b;
      if (best < 0) break;
      Eigen::VectorXd v = g.col(best) - L * L.row(best).transpose();
      v /= std::sqrt(best_d);
      d -= v.cwiseAbs2();
      d(best) = 0, d((best % n) * n + best / n) = 0;
      L.conservativeResize(nn, L.cols() + 1);
      L.col(L.cols() - 1) = v;
    }
  }
  return L;
}

Eigen::MatrixXd as_matrix(const torch::Tensor& l) {  // [n_vec, n, n] → [n², n_vec]
  const torch::Tensor t = l.reshape({l.size(0), -1}).contiguous();
  return Eigen::Map<const Eigen::Matrix<double, -1, -1, Eigen::RowMajor>>(t.data_ptr<double>(), t.size(0), t.size(1))
      .transpose();
}

}  // namespace

TEST(Cholesky, ReproducesAoEriWithinThreshold) {
  const auto& w = water();
  const auto n = std::int64_t(w.basis.n_functions());
  const Eigen::MatrixXd l = as_matrix(nnvmc::ccsd::cholesky_ao_eri(w.basis, 1e-8));
  const auto full = nnvmc::scf::eri_full(w.basis);
  const Eigen::MatrixXd approx = l * l.transpose();
  double max_err = 0;
  for (std::int64_t pq = 0; pq < n * n; ++pq)
    for (std::int64_t rs = 0; rs < n * n; ++rs)
      max_err = std::max(max_err, std::abs(approx(pq, rs) - full[std::size_t(pq * n * n + rs)]));
  EXPECT_LT(max_err, 1e-7);  // |error| ≤ sqrt(d_pq d_rs) < τ for the residual diagonals
  EXPECT_LT(l.cols(), n * (n + 1) / 2 + 1);
}

TEST(Cholesky, OnDemandColumnsGiveTheVectorsOfTheDenseDecomposition) {
  // one hydrogen moved: no symmetry-equivalent diagonals, so both pick the same pivot sequence
  // (with the two hydrogens equivalent, a tie of two diagonals equal up to rounding may be
  // broken differently and the rest of the vectors come in another order)
  nnvmc::System system = nnvmc::load_molecule("h2o", nnvmc::default_molecules_dir());
  system.atoms.back().position[0] += 0.05;
  const nnvmc::scf::BasisSet basis = nnvmc::scf::make_basis("6-31g", system);
  const auto full = nnvmc::scf::eri_full(basis);
  const auto nn = Eigen::Index(basis.n_functions() * basis.n_functions());
  const Eigen::Map<const Eigen::MatrixXd> g(full.data(), nn, nn);
  for (double tau : {1e-4, 1e-8}) {
    SCOPED_TRACE("tau " + std::to_string(tau));
    const Eigen::MatrixXd l = as_matrix(nnvmc::ccsd::cholesky_ao_eri(basis, tau));
    const Eigen::MatrixXd ref = dense_pivoted_cholesky(basis, tau);
    ASSERT_EQ(l.cols(), ref.cols());
    EXPECT_LT((l - ref).cwiseAbs().maxCoeff(), 1e-10);
    EXPECT_LT((l * l.transpose() - g).cwiseAbs().maxCoeff(), tau);  // |error| ≤ sqrt(d_pq d_rs) < τ
  }
}

TEST(Cholesky, EnergyErrorShrinksWithThresholdAndMatchesConventionalAtTightTau) {
  const auto& w = water();
  const double e_conv = nnvmc::ccsd::run_rccsd(nnvmc::ccsd::conventional_integrals(w.rhf, w.basis, 0), options()).e_ccsd;
  double previous = 1.0;
  for (double tau : {1e-3, 1e-5, 1e-8}) {
    const auto mo = nnvmc::ccsd::cholesky_integrals(w.rhf, w.basis, 0, tau);
    const double err = std::abs(nnvmc::ccsd::run_rccsd(mo, options()).e_ccsd - e_conv);
    SCOPED_TRACE("tau " + std::to_string(tau));
    EXPECT_LT(err, previous);
    previous = err;
    if (tau == 1e-8) {
      EXPECT_LT(err, 1e-7);
    }
  }
}

TEST(Cholesky, TriplesFromCholeskyVectorsMatchConventional) {
  const auto& w = water();
  auto o = options();
  o.triples = true;
  const auto conv = nnvmc::ccsd::run_rccsd(nnvmc::ccsd::conventional_integrals(w.rhf, w.basis, 0), o);
  const auto chol = nnvmc::ccsd::run_rccsd(nnvmc::ccsd::cholesky_integrals(w.rhf, w.basis, 0, 1e-9), o);
  EXPECT_NEAR(chol.e_t, conv.e_t, 1e-8);
}

// run_ccsd with a Cholesky threshold decomposes the ERIs once: the RHF's J/K use the same
// vectors as the CCSD (Psi4's scf_type cd with cc_type cd). Its RHF is the Cholesky-J/K SCF
// (which decomposes on its own) and its CCSD the one on those orbitals and vectors.
TEST(Cholesky, CcsdRunDecomposesOnceForTheRhfAndTheCcsd) {
  const auto& w = water();
  nnvmc::ccsd::CcsdRunOptions o;
  o.basis = "6-31g";
  o.cholesky_tau = 1e-5;
  o.ccsd = options();
  const auto run = nnvmc::ccsd::run_ccsd(w.system, o);
  EXPECT_TRUE(run.scf_cholesky);
  nnvmc::scf::ScfOptions scf;
  scf.jk.cholesky_tau = 1e-5;
  const auto rhf = nnvmc::scf::run_rhf(w.system, w.basis, scf);
  EXPECT_NEAR(run.rhf.energy, rhf.energy, 1e-10);
  const auto mo = nnvmc::ccsd::cholesky_integrals(rhf, w.basis, 0, 1e-5);
  EXPECT_EQ(run.n_cholesky, mo.chol.size(0));
  EXPECT_NEAR(run.cc.e_ccsd, nnvmc::ccsd::run_rccsd(mo, options()).e_ccsd, 1e-9);
  // within tau's reach of the exact-ERI RHF (--exact-scf), which the option still gives
  o.exact_scf = true;
  const auto exact = nnvmc::ccsd::run_ccsd(w.system, o);
  EXPECT_FALSE(exact.scf_cholesky);
  EXPECT_NEAR(exact.rhf.energy, w.rhf.energy, 1e-10);
  EXPECT_NEAR(run.rhf.energy, exact.rhf.energy, 1e-5);
  EXPECT_NEAR(run.cc.e_ccsd, exact.cc.e_ccsd, 1e-5);
}

// At a tight threshold the shared-vector run is the conventional one (total energies to 1e-7).
TEST(Cholesky, CcsdRunOnSharedVectorsMatchesConventionalAtTightTau) {
  const auto& w = water();
  nnvmc::ccsd::CcsdRunOptions o;
  o.basis = "6-31g";
  o.ccsd = options();
  const auto conv = nnvmc::ccsd::run_ccsd(w.system, o);
  o.cholesky_tau = 1e-9;
  const auto chol = nnvmc::ccsd::run_ccsd(w.system, o);
  EXPECT_NEAR(chol.rhf.energy, conv.rhf.energy, 1e-8);
  EXPECT_NEAR(chol.cc.e_ccsd, conv.cc.e_ccsd, 1e-7);
}

// Vectors of another basis are refused by the J/K builder, not read out of bounds.
TEST(Cholesky, JKBuilderRefusesVectorsOfAnotherBasis) {
  const auto& w = water();
  nnvmc::scf::JKOptions jk;
  jk.cholesky_tau = 1e-5;
  jk.cholesky_pairs = std::make_shared<const Eigen::MatrixXd>(
      nnvmc::scf::cholesky_eri_pairs(nnvmc::scf::make_basis("sto-3g", w.system), 1e-5));
  EXPECT_THROW({ const nnvmc::scf::JKBuilder builder(w.basis, jk); }, nnvmc::Error);
}

// The conventional AO → MO transformation, one p-slice at a time, equals the four-index
// contraction written out (random AO tensor with the 8-fold symmetry left out, rectangular
// orbitals), and gives back the AO integrals' storage.
TEST(ConventionalIntegrals, SliceWiseTransformEqualsTheFourIndexContraction) {
  torch::manual_seed(3);
  const std::int64_t n = 7, m = 5;
  const torch::Tensor g = torch::randn({n, n, n, n}, torch::kFloat64), c = torch::randn({n, m}, torch::kFloat64);
  std::vector<double> ao(g.data_ptr<double>(), g.data_ptr<double>() + g.numel());
  const torch::Tensor mo = nnvmc::ccsd::transform_ao_eri(std::move(ao), c);
  const torch::Tensor expected = torch::einsum("pP,qQ,rR,sS,pqrs->PQRS", {c, c, c, c, g});
  EXPECT_LT((mo - expected).abs().max().item<double>(), 1e-12 * expected.abs().max().item<double>());
  EXPECT_EQ(ao.capacity(), 0u);  // NOLINT(bugprone-use-after-move): released, as documented
  EXPECT_THROW(nnvmc::ccsd::transform_ao_eri(std::vector<double>(10), c), nnvmc::InputError);
}
