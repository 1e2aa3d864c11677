/// The `forward` Laplacian method against jvp, reverse, finite differences and closed forms.
#include <gtest/gtest.h>

#include "common/test_util.hpp"
#include "core/errors.hpp"
#include "laplacian_checks.hpp"
#include "models/analytic/hydrogenic.hpp"
#include "models/ferminet/ferminet.hpp"
#include "models/hf/hf_determinant.hpp"

using namespace nnvmc;
using test::expect_close;
using test::kinetic;

namespace {

struct FermiNetCase {
  const char* molecule;
  int width1, width2, layers, dets;
};

class ForwardOnFermiNet : public ::testing::TestWithParam<FermiNetCase> {};

TEST_P(ForwardOnFermiNet, AgreesWithJvpAndReverseTo1e10) {
  const auto c = GetParam();
  const System s = load_molecule(c.molecule, test::molecules_dir());
  torch::manual_seed(1);
  FermiNet net(test::small_ferminet(c.width1, c.width2, c.layers, c.dets), s);
  test::perturb_parameters(net, 0.1, 5);
  const auto r = test::random_positions(s, 6, 7);
  const auto f = kinetic("forward", net, test::tensors(s), r), j = kinetic("jvp", net, test::tensors(s), r), b = kinetic("reverse", net, test::tensors(s), r);
  expect_close(f.laplacian, j.laplacian, 1e-10, 0, "laplacian vs jvp");
  expect_close(f.laplacian, b.laplacian, 1e-10, 0, "laplacian vs reverse");
  expect_close(f.grad_sq, j.grad_sq, 1e-10, 0, "grad_sq vs jvp");
  expect_close(f.grad_sq, b.grad_sq, 1e-10, 0, "grad_sq vs reverse");
}

INSTANTIATE_TEST_SUITE_P(
    WidthsDeterminantsAndSpins, ForwardOnFermiNet,
    ::testing::Values(FermiNetCase{"lih", 16, 4, 2, 2}, FermiNetCase{"lih", 8, 4, 3, 1},
                      FermiNetCase{"lih", 32, 8, 1, 4}, FermiNetCase{"lih", 12, 6, 2, 3},
                      FermiNetCase{"h", 16, 4, 2, 2}, FermiNetCase{"li", 16, 4, 2, 3},
                      FermiNetCase{"he", 8, 4, 2, 1}, FermiNetCase{"h2o", 16, 4, 2, 2}));

TEST(ForwardLaplacian, MatchesFiniteDifferencesOnFermiNet) {
  const System s = load_molecule("lih", test::molecules_dir());
  torch::manual_seed(2);
  FermiNet net(test::small_ferminet(), s);
  test::perturb_parameters(net, 0.1, 6);
  const auto r = test::random_positions(s, 5, 8);
  const auto f = kinetic("forward", net, test::tensors(s), r), fd = test::finite_differences(net, test::tensors(s), r, 1e-3);
  expect_close(f.laplacian, fd.laplacian, 1e-6, 1e-6, "laplacian");
  expect_close(f.grad_sq, fd.grad_sq, 1e-7, 1e-7, "grad_sq");
}

TEST(ForwardLaplacian, CarriesTheSameLogPsiAsForward) {
  const System s = load_molecule("lih", test::molecules_dir());
  torch::manual_seed(2);
  FermiNet net(test::small_ferminet(), s);
  const auto r = test::random_positions(s, 6, 9);
  torch::NoGradGuard ng;
  const auto a = net.forward(r, test::tensors(s));
  const auto b = net.forward_laplacian(Blocks<FwdLap>::positions(r), test::tensors(s));
  expect_close(b.logabs.value, a.logabs, 1e-12, 0, "logabs");
  EXPECT_TRUE(torch::equal(b.sign, a.sign));
}

TEST(ForwardLaplacian, SameSpinElectronsNearlyCoincidentMatchFiniteDifferences) {
  // Electrons 0 and 1 (both spin up) 0.01 bohr apart: the orbital matrices are nearly
  // singular and ∇²log|ψ| ≈ −2/|r_01|² is large; a walker may also lie close to a node of ψ,
  // where |∇²log|ψ|| ~ 1e8 and no finite-difference step is accurate, so each walker is
  // checked against the FD error estimated by step halving. Several networks (seeds).
  const System s = load_molecule("lih", test::molecules_dir());
  for (const std::uint64_t seed : {2, 7, 12345}) {
    torch::manual_seed(seed);
    FermiNet net(test::small_ferminet(), s);
    test::perturb_parameters(net, 0.1, 10);
    auto r = test::random_positions(s, 4, 11);
    r.select(1, 1).copy_(r.select(1, 0) + torch::tensor({0.006, -0.005, 0.0055}, r.options()));
    SCOPED_TRACE("seed " + std::to_string(seed));
    const auto f = kinetic("forward", net, test::tensors(s), r), b = kinetic("reverse", net, test::tensors(s), r);
    EXPECT_GT(f.laplacian.abs().min().item<double>(), 1e3);
    test::expect_matches_finite_differences(f, net, test::tensors(s), r, 1e-5);
    expect_close(f.laplacian, b.laplacian, 1e-9, 0, "laplacian vs reverse");
    expect_close(f.grad_sq, b.grad_sq, 1e-9, 0, "grad_sq vs reverse");
  }
}

TEST(ForwardLaplacian, HydrogenicProductMatchesClosedForm) {
  // log ψ = −ζ Σ_i |r_i|: ∇²log ψ = −2ζ Σ_i 1/|r_i|, |∇log ψ|² = N ζ².
  const System s = load_molecule("li", test::molecules_dir());
  Hydrogenic wf(s, 1.7);
  const auto r = test::random_positions(s, 7, 12);
  const auto f = kinetic("forward", wf, test::tensors(s), r), j = kinetic("jvp", wf, test::tensors(s), r);
  const auto centre = torch::tensor({s.atoms[0].position[0], s.atoms[0].position[1], s.atoms[0].position[2]},
                                    r.options());
  const auto exact_lap = -2 * 1.7 * (1 / (r - centre).norm(2, -1)).sum(1);
  expect_close(f.laplacian, exact_lap, 1e-12, 0, "laplacian");
  expect_close(f.grad_sq, torch::full_like(f.grad_sq, 3 * 1.7 * 1.7), 1e-12, 0, "grad_sq");
  expect_close(f.laplacian, j.laplacian, 1e-10, 0, "laplacian vs jvp");
}

TEST(ForwardLaplacian, HydrogenAtomLocalKineticEnergyIsExact) {
  // ψ = e^{−r}: −½(∇²log ψ + |∇log ψ|²) = −½(−2/r + 1), so E_L = −½ with V = −1/r.
  const System s = load_molecule("h", test::molecules_dir());
  Hydrogenic wf(s, 1.0);
  const auto r = test::random_positions(s, 9, 13);
  const auto f = kinetic("forward", wf, test::tensors(s), r);
  const auto dist = (r.squeeze(1) - torch::tensor({s.atoms[0].position[0], s.atoms[0].position[1],
                                                   s.atoms[0].position[2]}, r.options())).norm(2, -1);
  expect_close(-0.5 * (f.laplacian + f.grad_sq) - 1 / dist, torch::full_like(dist, -0.5), 1e-12, 0);
}

TEST(ForwardLaplacian, Float32RunsAndIsCloseToFloat64) {
  const System s = load_molecule("lih", test::molecules_dir());
  torch::manual_seed(2);
  FermiNet net(test::small_ferminet(), s);
  test::perturb_parameters(net, 0.1, 14);
  const auto r = test::random_positions(s, 8, 15);
  const auto f64 = kinetic("forward", net, test::tensors(s), r);
  net.to(torch::kFloat32);
  const auto f32 = kinetic("forward", net, test::tensors(s, torch::kFloat32), r.to(torch::kFloat32));
  EXPECT_EQ(f32.laplacian.scalar_type(), torch::kFloat32);
  expect_close(f32.laplacian, f64.laplacian, 1e-4, 0, "laplacian");
  expect_close(f32.grad_sq, f64.grad_sq, 1e-4, 0, "grad_sq");
}

TEST(ForwardLaplacian, HartreeFockDeterminantAgreesWithJvpAndReverse) {
  // The bare UHF determinant through the shared gaussian_orbitals block: closed shell (LiH)
  // and open shell (Li, an empty spin block is not needed: 2 up, 1 down).
  for (const char* molecule : {"lih", "li"}) {
    const System s = load_molecule(molecule, test::molecules_dir());
    HartreeFockDeterminant wf(s, "6-31g");
    const auto r = test::random_positions(s, 5, 21);
    const auto f = kinetic("forward", wf, test::tensors(s), r), j = kinetic("jvp", wf, test::tensors(s), r);
    const auto b = kinetic("reverse", wf, test::tensors(s), r);
    expect_close(f.laplacian, j.laplacian, 1e-10, 0, std::string(molecule) + " laplacian vs jvp");
    expect_close(f.laplacian, b.laplacian, 1e-10, 0, std::string(molecule) + " laplacian vs reverse");
    expect_close(f.grad_sq, j.grad_sq, 1e-10, 0, std::string(molecule) + " grad_sq vs jvp");
    torch::NoGradGuard ng;
    const auto plain = wf.forward(r, test::tensors(s));
    const auto fl = wf.forward_laplacian(Blocks<FwdLap>::positions(r), test::tensors(s));
    expect_close(fl.logabs.value, plain.logabs, 1e-12, 0, std::string(molecule) + " logabs");
  }
}

TEST(ForwardLaplacian, AnsatzWithoutProgramGivesConfigError) {
  const System s = load_molecule("lih", test::molecules_dir());
  GaussianDeterminant wf(s, torch::randn({4, 3}, torch::kFloat64), torch::ones({4}, torch::kFloat64));
  const auto r = test::random_positions(s, 2);
  try {
    kinetic("forward", wf, test::tensors(s), r);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("gaussian_determinant"), std::string::npos) << e.what();
  }
}

}  // namespace
