#include <ATen/functorch/DynamicLayer.h>
#include <gtest/gtest.h>

#include "common/test_util.hpp"
#include "core/errors.hpp"
#include "hamiltonian/laplacian.hpp"
#include "laplacian_checks.hpp"
#include "models/analytic/hydrogenic.hpp"
#include "models/ferminet/ferminet.hpp"

using namespace nnvmc;
using test::expect_close;
using test::finite_differences;

namespace {

KineticTerms run(const std::string& method, WaveFunction& wf, const System& s, const torch::Tensor& r,
                 int probes = 1) {
  HamiltonianOptions o;
  o.laplacian = method;
  o.hutchinson.probes = probes;
  return make_laplacian(o, 3)->compute(wf, test::tensors(s, r.scalar_type()), r);
}

/// LiH, with the global RNG seeded so the network initialisation is reproducible.
System lih() {
  torch::manual_seed(0);
  return load_molecule("lih", test::molecules_dir());
}

}  // namespace

TEST(Laplacian, JvpAndReverseAgreeOnFermiNetTo1e10) {
  const System s = lih();
  FermiNet net(test::small_ferminet(), s);
  const auto r = test::random_positions(s, 8);
  const auto a = run("jvp", net, s, r), b = run("reverse", net, s, r);
  expect_close(a.laplacian, b.laplacian, 1e-10, 0);
  expect_close(a.grad_sq, b.grad_sq, 1e-12, 0);
}

TEST(Laplacian, JvpLeavesNoTransformLevelBehindWhenTheWavefunctionThrows) {
  // jvp runs the wavefunction inside functorch's vmap/jvp/grad levels; an exception from the
  // model must pop them, or every later autograd call on this thread would run transformed.
  const System s = lih();
  FermiNet net(test::small_ferminet(), s);
  const auto wrong = test::random_positions(s, 4).narrow(1, 0, 3);  // 3 of LiH's 4 electrons
  HamiltonianOptions o;
  o.laplacian = "jvp";
  auto method = make_laplacian(o, 3);
  EXPECT_THROW(method->compute(net, test::tensors(s, torch::kFloat64), wrong), InputError);
  EXPECT_TRUE(at::functorch::getDynamicLayerStack().empty());
  const auto r = test::random_positions(s, 4);
  expect_close(method->compute(net, test::tensors(s, torch::kFloat64), r).laplacian,
               run("reverse", net, s, r).laplacian, 1e-10, 0);
}

TEST(Laplacian, ExactMethodsMatchFiniteDifferencesOnFermiNet) {
  const System s = lih();
  FermiNet net(test::small_ferminet(), s);
  const auto r = test::random_positions(s, 6);
  const auto fd = finite_differences(net, test::tensors(s), r, 1e-3);
  for (const auto* m : {"jvp", "reverse"}) {
    const auto t = run(m, net, s, r);
    expect_close(t.laplacian, fd.laplacian, 1e-5, 1e-5);
    expect_close(t.grad_sq, fd.grad_sq, 1e-6, 1e-6);
  }
}

TEST(Laplacian, ExactMethodsMatchFiniteDifferencesOnGaussianDeterminant) {
  const System s = lih();
  auto centres = torch::tensor({{0.0, 0.0, 0.0}, {0.3, -0.2, 0.5}, {0.0, 0.0, 3.0}, {0.1, 0.4, 2.5}},
                               torch::kFloat64);
  GaussianDeterminant wf(s, centres, torch::tensor({0.7, 0.4, 1.1, 0.5}, torch::kFloat64));
  const auto r = test::random_positions(s, 6);
  const auto fd = finite_differences(wf, test::tensors(s), r, 1e-3);
  const auto a = run("jvp", wf, s, r), b = run("reverse", wf, s, r);
  expect_close(a.laplacian, b.laplacian, 1e-10, 1e-12);
  expect_close(a.laplacian, fd.laplacian, 1e-5, 1e-5);
}

TEST(Laplacian, HutchinsonIsUnbiasedWithinThreeStandardErrorsForRademacherAndGaussianProbes) {
  const System s = lih();
  FermiNet net(test::small_ferminet(), s);
  const auto r = test::random_positions(s, 4);
  const auto exact = run("reverse", net, s, r).laplacian;
  torch::Tensor se_of[2];
  for (const int k : {0, 1}) {  // many independent single-probe estimates on the same walkers
    HamiltonianOptions o;
    o.laplacian = "hutchinson";
    o.hutchinson.distribution = k == 0 ? "rademacher" : "gaussian";
    se_of[k] = test::expect_hutchinson_unbiased(o, net, test::tensors(s), r, exact, 400, 3);
  }
  // Gaussian probes add the Hessian's diagonal to the variance (2 Σ H_ii² more than Rademacher)
  EXPECT_TRUE((se_of[1] > se_of[0]).all().item<bool>()) << se_of[0] << se_of[1];
}

// Regression: with torch::linalg_slogdet in the ansatz, float32 jvp/reverse Laplacians were
// wrong (here by 56× the size of the kinetic terms on one walker; up to 5 % on sampled CH4
// walkers of the default-width network) because slogdet's second derivatives lose accuracy in
// float32; the LU route (lu_slogdet) keeps them at 1e-4 of that size.
TEST(Laplacian, Float32AutogradMethodsMatchFloat64OnMethaneWalkers) {
  torch::manual_seed(0);
  const System s = load_molecule("ch4", test::molecules_dir());
  FermiNet net(test::small_ferminet(32, 8, 2, 4), s);
  const auto r = test::random_positions(s, 48, 5) * 0.6;
  const auto ref = run("forward", net, s, r);
  net.to(torch::kFloat32);
  const auto r32 = r.to(torch::kFloat32);
  for (const auto* m : {"jvp", "reverse"}) {
    const auto t = run(m, net, s, r32);
    ASSERT_EQ(t.laplacian.scalar_type(), torch::kFloat32) << m;
    // error relative to the size of the terms of the kinetic energy (a Laplacian can pass zero)
    const auto scale = ref.laplacian.abs() + ref.grad_sq;
    const auto rel = ((t.laplacian.to(torch::kFloat64) - ref.laplacian).abs() / scale).max();
    EXPECT_LT(rel.item<double>(), 1e-3) << m << ": worst relative error of the float32 Laplacian";
  }
}
