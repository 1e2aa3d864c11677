/// Every Laplacian method on the Psiformer, and its electron–electron cusp.
#include <gtest/gtest.h>

#include "common/test_util.hpp"
#include "hamiltonian/local_energy.hpp"
#include "laplacian_checks.hpp"
#include "models/psiformer/psiformer.hpp"

using namespace nnvmc;
using test::expect_close;
using test::kinetic;

namespace {

struct PsiformerCase {
  const char* molecule;
  int layers, heads, head_dim, dets;
  bool layer_norm;
  const char* jastrow;
  bool hidden_mlp = true;  ///< false: mlp_hidden_dims [] (each layer's MLP one linear map)
};

/// Readable test names in ctest (instead of the struct's bytes).
void PrintTo(const PsiformerCase& c, std::ostream* os) {
  *os << c.molecule << "_L" << c.layers << "_H" << c.heads << "x" << c.head_dim << "_K" << c.dets
      << (c.layer_norm ? "_ln_" : "_noln_") << c.jastrow << (c.hidden_mlp ? "" : "_nohidden");
}

class ExactLaplaciansOnPsiformer : public ::testing::TestWithParam<PsiformerCase> {};

TEST_P(ExactLaplaciansOnPsiformer, ForwardJvpAndReverseAgreeTo1e10) {
  const auto c = GetParam();
  const System s = load_molecule(c.molecule, test::molecules_dir());
  auto o = test::small_psiformer(c.layers, c.heads, c.head_dim, c.dets);
  o.layer_norm = c.layer_norm;
  o.jastrow = c.jastrow;
  if (!c.hidden_mlp) o.mlp_hidden_dims = {};
  Psiformer net(o, s);
  test::perturb_parameters(net, 0.1, 5);
  const auto r = test::random_positions(s, 5, 7);
  const auto sys = test::tensors(s);
  const auto f = kinetic("forward", net, sys, r), j = kinetic("jvp", net, sys, r), b = kinetic("reverse", net, sys, r);
  expect_close(f.laplacian, j.laplacian, 1e-10, 0, "laplacian forward vs jvp");
  expect_close(f.laplacian, b.laplacian, 1e-10, 0, "laplacian forward vs reverse");
  expect_close(j.laplacian, b.laplacian, 1e-10, 0, "laplacian jvp vs reverse");
  expect_close(f.grad_sq, j.grad_sq, 1e-10, 0, "grad_sq forward vs jvp");
  expect_close(f.grad_sq, b.grad_sq, 1e-10, 0, "grad_sq forward vs reverse");
}

INSTANTIATE_TEST_SUITE_P(
    LayersSpinsAndOptions, ExactLaplaciansOnPsiformer,
    ::testing::Values(PsiformerCase{"lih", 2, 2, 4, 2, true, "simple_ee"},
                      PsiformerCase{"li", 3, 1, 6, 3, true, "simple_ee"},
                      PsiformerCase{"he", 2, 2, 4, 1, false, "none"},
                      PsiformerCase{"h", 2, 2, 4, 2, true, "simple_ee"},
                      PsiformerCase{"h2o", 1, 2, 4, 2, true, "simple_ee"},
                      PsiformerCase{"lih", 2, 2, 4, 2, true, "simple_ee", false}));

TEST(PsiformerLaplacian, ForwardMatchesFiniteDifferences) {
  const System s = load_molecule("lih", test::molecules_dir());
  Psiformer net(test::small_psiformer(), s);
  test::perturb_parameters(net, 0.1, 6);
  const auto r = test::random_positions(s, 4, 8);
  const auto f = kinetic("forward", net, test::tensors(s), r);
  test::expect_matches_finite_differences(f, net, test::tensors(s), r, 1e-3);
}

TEST(PsiformerLaplacian, ForwardCarriesTheSameLogPsiAsForward) {
  const System s = load_molecule("lih", test::molecules_dir());
  Psiformer net(test::small_psiformer(), s);
  test::perturb_parameters(net, 0.1, 9);
  const auto r = test::random_positions(s, 6, 9);
  torch::NoGradGuard ng;
  const auto a = net.forward(r, test::tensors(s));
  const auto b = net.forward_laplacian(Blocks<FwdLap>::positions(r), test::tensors(s));
  expect_close(b.logabs.value, a.logabs, 1e-12, 0, "logabs");
  EXPECT_TRUE(torch::equal(b.sign, a.sign));
}

TEST(PsiformerLaplacian, HutchinsonIsUnbiasedWithinThreeStandardErrors) {
  const System s = load_molecule("lih", test::molecules_dir());
  Psiformer net(test::small_psiformer(1, 2, 4, 2), s);
  test::perturb_parameters(net, 0.1, 10);
  const auto r = test::random_positions(s, 4, 10);
  const auto exact = kinetic("forward", net, test::tensors(s), r).laplacian;
  // Each draw averages 10 probes (one gradient pass, 10 Hessian–vector products).
  HamiltonianOptions o;
  o.laplacian = "hutchinson";
  o.hutchinson.probes = 10;
  test::expect_hutchinson_unbiased(o, net, test::tensors(s), r, exact, 40, 3);
}

TEST(PsiformerLaplacian, Float32ForwardIsCloseToFloat64) {
  const System s = load_molecule("lih", test::molecules_dir());
  Psiformer net(test::small_psiformer(), s);
  test::perturb_parameters(net, 0.1, 14);
  const auto r = test::random_positions(s, 8, 15);
  const auto f64 = kinetic("forward", net, test::tensors(s), r);
  net.to(torch::kFloat32);
  const auto sys32 = test::tensors(s, torch::kFloat32);
  const auto r32 = r.to(torch::kFloat32);
  for (const auto* m : {"forward", "jvp"}) {
    const auto t = kinetic(m, net, sys32, r32);
    EXPECT_EQ(t.laplacian.scalar_type(), torch::kFloat32) << m;
    const auto scale = f64.laplacian.abs() + f64.grad_sq;  // a Laplacian can pass zero
    const auto rel = ((t.laplacian.to(torch::kFloat64) - f64.laplacian).abs() / scale).max();
    EXPECT_LT(rel.item<double>(), 1e-3) << m;
  }
}

TEST(PsiformerLaplacian, JastrowCancelsTheElectronElectronSingularity) {
  // E_L = … + 1/r₁₂: the network's one-electron features give no cusp, so without the
  // Jastrow factor E_L diverges as 1/r₁₂ (coefficient 1); the simple_ee factor's slope ½ at
  // coalescence cancels it exactly (coefficient 0), for every value of α.
  const System he = load_molecule("he", test::molecules_dir());
  auto with = test::small_psiformer();
  auto without = with;
  without.jastrow = "none";
  torch::manual_seed(4);
  Psiformer a(with, he);
  test::perturb_parameters(a, 0.1, 12);
  torch::manual_seed(4);
  Psiformer b(without, he);
  test::perturb_parameters(b, 0.1, 12);
  for (const auto* m : {"forward", "reverse"}) {
    EXPECT_NEAR(test::inverse_distance_coefficient(a, he, m), 0.0, 1e-6) << m;
    EXPECT_NEAR(test::inverse_distance_coefficient(b, he, m), 1.0, 1e-6) << m;
  }
}

}  // namespace
