/// Every Laplacian method on the Orbformer: forward against jvp and reverse to 1e-10, against
/// finite differences, Hutchinson unbiased, float32 close to float64.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <tuple>

#include "common/test_util.hpp"
#include "laplacian_checks.hpp"
#include "models/orbformer/orbformer.hpp"

using namespace nnvmc;
using test::expect_close;
using test::kinetic;

namespace {

/// Forward, jvp and reverse Laplacians and |∇ log|ψ||² agree to 1e-10; returns the forward ones.
KineticTerms exact_methods_agree(Orbformer& net, const SystemTensors& sys, const torch::Tensor& r) {
  const auto f = kinetic("forward", net, sys, r), j = kinetic("jvp", net, sys, r), b = kinetic("reverse", net, sys, r);
  expect_close(f.laplacian, j.laplacian, 1e-10, 0, "laplacian vs jvp");
  expect_close(f.laplacian, b.laplacian, 1e-10, 0, "laplacian vs reverse");
  expect_close(f.grad_sq, j.grad_sq, 1e-10, 0, "grad_sq vs jvp");
  expect_close(f.grad_sq, b.grad_sq, 1e-10, 0, "grad_sq vs reverse");
  return f;
}

class ForwardOnOrbformer : public ::testing::TestWithParam<const char*> {};

}  // namespace

TEST_P(ForwardOnOrbformer, AgreesWithJvpAndReverseTo1e10) {
  const System s = load_molecule(GetParam(), test::molecules_dir());
  Orbformer net(test::small_orbformer());
  test::perturb_parameters(net, 0.1, 5);
  const auto sys = test::tensors(s);
  const auto r = test::random_positions(s, 4, 7);
  exact_methods_agree(net, sys, r);
  torch::NoGradGuard ng;
  const auto fl = net.forward_laplacian(Blocks<FwdLap>::positions(r), sys);
  const auto plain = net.forward(r, sys);
  expect_close(fl.logabs.value, plain.logabs, 1e-12, 0, "log|psi| of the forward pass");
  EXPECT_TRUE(torch::equal(fl.sign, plain.sign));
}

INSTANTIATE_TEST_SUITE_P(Molecules, ForwardOnOrbformer, ::testing::Values("h", "h2", "lih", "li", "h2o"));

// model.orbformer.edge_features: false drops the attention's distance bias: the exact methods
// still agree, and no parameter is left that the wavefunction does not depend on.
TEST(OrbformerLaplacian, WithoutEdgeFeaturesExactMethodsAgreeAndEveryParameterIsUsed) {
  const System s = load_molecule("lih", test::molecules_dir());
  auto o = test::small_orbformer();
  o.edge_features = false;
  Orbformer net(o);
  Orbformer with_edges(test::small_orbformer());
  EXPECT_EQ(net.parameters().size() + std::size_t(o.layers), with_edges.parameters().size());
  test::perturb_parameters(net, 0.1, 5);
  const auto sys = test::tensors(s);
  const auto r = test::random_positions(s, 4, 7);
  test::expect_matches_finite_differences(exact_methods_agree(net, sys, r), net, sys, r, 1e-3);
  const auto params = net.parameters();
  const auto g = torch::autograd::grad({net.forward(r, sys).logabs.sum()}, params, {}, false, false, true);
  for (std::size_t k = 0; k < g.size(); ++k) EXPECT_TRUE(g[k].defined()) << "parameter " << k << " is unused";
}

// layers, nuclear_layers and orbital_layers may each be 0 (the validator allows it): the
// features go straight to the next stage, and every Laplacian method still agrees.
TEST(OrbformerLaplacian, WithoutAttentionLayersExactMethodsAgree) {
  const System s = load_molecule("lih", test::molecules_dir());
  for (const char* zero : {"layers", "nuclear_layers", "orbital_layers", "all"}) {
    auto o = test::small_orbformer();
    const std::string z = zero;
    if (z == "layers" || z == "all") o.layers = 0;
    if (z == "nuclear_layers" || z == "all") o.nuclear_layers = 0;
    if (z == "orbital_layers" || z == "all") o.orbital_layers = 0;
    Orbformer net(o);
    test::perturb_parameters(net, 0.1, 5);
    const auto sys = test::tensors(s);
    const auto r = test::random_positions(s, 4, 7);
    SCOPED_TRACE(zero);
    const auto f = exact_methods_agree(net, sys, r);
    EXPECT_TRUE(torch::isfinite(f.laplacian).all().item<bool>());
    torch::NoGradGuard ng;
    const auto fl = net.forward_laplacian(Blocks<FwdLap>::positions(r), sys);
    expect_close(fl.logabs.value, net.forward(r, sys).logabs, 1e-12, 0, "log|psi| of the forward pass");
  }
}

// The exponential Jastrow's slope ½ at coalescence cancels E_L's 1/r₁₂ when the determinants
// carry no cusp of their own (edge_features: false). With oneqmc's distance bias in the attention
// (edge_features: true, the default) the orbitals depend on |r_ij| linearly at 0, so a 1/r₁₂
// term remains (as in oneqmc), the same through both exact Laplacians.
TEST(OrbformerLaplacian, WithoutEdgeFeaturesTheJastrowCancelsTheElectronElectronSingularity) {
  const System he = load_molecule("he", test::molecules_dir());
  for (const bool edges : {false, true}) {
    auto o = test::small_orbformer();
    o.edge_features = edges;
    Orbformer net(o);
    test::perturb_parameters(net, 0.1, 12);
    const double forward = test::inverse_distance_coefficient(net, he, "forward");
    const double reverse = test::inverse_distance_coefficient(net, he, "reverse");
    EXPECT_NEAR(forward, reverse, 1e-6) << "edge_features " << edges;
    if (edges) EXPECT_GT(std::abs(forward), 1e-2) << "the distance bias leaves a 1/r12 term";  // 0.16 here
    else EXPECT_NEAR(forward, 0.0, 1e-6);
  }
}

TEST(OrbformerLaplacian, ForwardMatchesFiniteDifferences) {
  const System s = load_molecule("lih", test::molecules_dir());
  Orbformer net(test::small_orbformer());
  test::perturb_parameters(net, 0.1, 6);
  const auto sys = test::tensors(s);
  const auto r = test::random_positions(s, 5, 8);
  test::expect_matches_finite_differences(kinetic("forward", net, sys, r), net, sys, r, 1e-3);
}

TEST(OrbformerLaplacian, HutchinsonIsUnbiased) {
  const System s = load_molecule("lih", test::molecules_dir());
  Orbformer net(test::small_orbformer());
  test::perturb_parameters(net, 0.1, 9);
  const auto sys = test::tensors(s);
  const auto r = test::random_positions(s, 3, 10);
  const auto exact = kinetic("forward", net, sys, r).laplacian;
  HamiltonianOptions o;
  o.laplacian = "hutchinson";
  o.hutchinson.probes = 4;
  test::expect_hutchinson_unbiased(o, net, sys, r, exact, 30, 4);
}

TEST(OrbformerLaplacian, Float32ExactMethodsAreCloseToFloat64) {
  const System s = load_molecule("lih", test::molecules_dir());
  Orbformer net(test::small_orbformer());
  test::perturb_parameters(net, 0.1, 12);
  const auto r = test::random_positions(s, 4, 13);
  const auto ref = kinetic("forward", net, test::tensors(s), r);
  net.to(torch::kFloat32);
  const auto sys32 = test::tensors(s, torch::kFloat32);
  const auto r32 = r.to(torch::kFloat32);
  for (const char* method : {"forward", "jvp", "reverse"}) {
    const auto k = kinetic(method, net, sys32, r32);
    ASSERT_EQ(k.laplacian.scalar_type(), torch::kFloat32) << method;
    // error relative to the size of the kinetic terms of each walker (a Laplacian can pass zero)
    const auto scale = ref.laplacian.abs() + ref.grad_sq;
    for (const auto& [name, got, want] : {std::tuple{"laplacian", k.laplacian, ref.laplacian},
                                          std::tuple{"grad_sq", k.grad_sq, ref.grad_sq}}) {
      const auto rel = ((got.to(torch::kFloat64) - want).abs() / scale).max().item<double>();
      EXPECT_LT(rel, 1e-3) << method << " " << name << ": worst relative error in float32";
    }
  }
}
