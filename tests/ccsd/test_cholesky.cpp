/// Cholesky-decomposed integrals converge to the conventional CCSD energy as τ shrinks.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "ccsd/cholesky.hpp"
#include "ccsd/mo_integrals.hpp"
#include "ccsd/rccsd.hpp"
#include "scf/integrals.hpp"

namespace {

struct Water {
  nnvmc::System system = nnvmc::load_molecule("h2o", nnvmc::default_molecules_dir());
  nnvmc::scf::BasisSet basis = nnvmc::scf::make_basis("6-31g", system);
  nnvmc::scf::ScfResult rhf = nnvmc::scf::run_rhf(system, basis);
};

nnvmc::ccsd::CcsdOptions options() {
  nnvmc::ccsd::CcsdOptions o;
  o.plan.cost = nnvmc::batching::CostModel{};
  return o;
}

}  // namespace

TEST(Cholesky, ReproducesAoEriWithinThreshold) {
  Water w;
  const auto n = std::int64_t(w.basis.n_functions());
  const auto l = nnvmc::ccsd::cholesky_ao_eri(w.basis, 1e-8);
  const auto full = nnvmc::scf::eri_full(w.basis);
  const Eigen::MatrixXd approx = l * l.transpose();
  double max_err = 0;
  for (std::int64_t pq = 0; pq < n * n; ++pq)
    for (std::int64_t rs = 0; rs < n * n; ++rs)
      max_err = std::max(max_err, std::abs(approx(pq, rs) - full[std::size_t(pq * n * n + rs)]));
  EXPECT_LT(max_err, 1e-7);  // |error| ≤ sqrt(d_pq d_rs) < τ for the residual diagonals
  EXPECT_LT(l.cols(), n * (n + 1) / 2 + 1);
}

TEST(Cholesky, EnergyErrorShrinksWithThresholdAndMatchesConventionalAtTightTau) {
  Water w;
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
  Water w;
  auto o = options();
  o.triples = true;
  const auto conv = nnvmc::ccsd::run_rccsd(nnvmc::ccsd::conventional_integrals(w.rhf, w.basis, 0), o);
  const auto chol = nnvmc::ccsd::run_rccsd(nnvmc::ccsd::cholesky_integrals(w.rhf, w.basis, 0, 1e-9), o);
  EXPECT_NEAR(chol.e_t, conv.e_t, 1e-8);
}
