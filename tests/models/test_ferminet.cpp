#include <gtest/gtest.h>

#include "common/test_util.hpp"
#include "core/errors.hpp"
#include "models/ferminet/ferminet.hpp"
#include "models/registry.hpp"

using namespace nnvmc;

TEST(FermiNet, ExchangeOfSameSpinElectronsFlipsSignAndKeepsModulus) {
  const System s = load_molecule("lih", test::molecules_dir());  // 2 up, 2 down
  FermiNet net(test::small_ferminet(), s);
  const auto r = test::random_positions(s, 16);
  torch::NoGradGuard ng;
  const auto a = net.forward(r, test::tensors(s));
  for (auto [i, j] : std::vector<std::pair<int, int>>{{0, 1}, {2, 3}}) {
    const auto b = net.forward(test::swap_electrons(r, i, j), test::tensors(s));
    EXPECT_TRUE(torch::allclose(a.logabs, b.logabs, 1e-12, 1e-12));
    EXPECT_TRUE(torch::equal(a.sign, -b.sign));
  }
}

TEST(FermiNet, SeesTheGeometryItIsGivenAndIsTranslationInvariant) {
  // Geometry is passed at evaluation: translating electrons and nuclei together leaves ψ
  // unchanged, and moving the nuclei alone changes it (the network is not pinned to the
  // geometry it was built with).
  const System s = load_molecule("lih", test::molecules_dir());
  FermiNet net(test::small_ferminet(), s);
  const auto r = test::random_positions(s, 6);
  const auto sys = test::tensors(s);
  auto moved = sys;
  const auto shift = torch::tensor({0.3, -1.2, 0.7}, torch::kFloat64);
  moved.nuclei = sys.nuclei + shift;
  torch::NoGradGuard ng;
  const auto a = net.forward(r, sys), b = net.forward(r + shift, moved), c = net.forward(r, moved);
  EXPECT_TRUE(torch::allclose(a.logabs, b.logabs, 1e-12, 1e-12));
  EXPECT_TRUE(torch::equal(a.sign, b.sign));
  EXPECT_GT((a.logabs - c.logabs).abs().max().item<double>(), 1e-3);
}

TEST(FermiNet, RefusesAMoleculeWithOtherAtoms) {
  const System s = load_molecule("lih", test::molecules_dir());
  FermiNet net(test::small_ferminet(), s);
  EXPECT_NO_THROW(net.check_system(test::tensors(s)));
  EXPECT_THROW(net.check_system(test::tensors(load_molecule("h2", test::molecules_dir()))), InputError);
}

TEST(FermiNet, OrbitalsHaveShapeBKNN) {
  const System s = load_molecule("lih", test::molecules_dir());
  FermiNet net(test::small_ferminet(8, 4, 1, 3), s);
  const auto phi = net.orbitals(test::random_positions(s, 5), test::tensors(s));
  EXPECT_EQ(phi.sizes(), (std::vector<int64_t>{5, 3, 4, 4}));
}

TEST(FermiNet, LogAbsEqualsLogOfSummedDeterminants) {
  const System s = load_molecule("he", test::molecules_dir());
  FermiNet net(test::small_ferminet(8, 4, 2, 3), s);
  const auto r = test::random_positions(s, 7);
  torch::NoGradGuard ng;
  const auto psi = torch::linalg_det(net.orbitals(r, test::tensors(s))).sum(1);
  const auto out = net.forward(r, test::tensors(s));
  EXPECT_TRUE(torch::allclose(out.logabs, psi.abs().log(), 1e-10, 1e-12));
  EXPECT_TRUE(torch::equal(out.sign, psi.sign()));
}

TEST(FermiNet, WorksForOneSpinOnlyAndFloat32) {
  const System h = load_molecule("h", test::molecules_dir());
  FermiNet net(test::small_ferminet(), h);
  net.to(torch::kFloat32);
  const auto out = net.forward(test::random_positions(h, 4).to(torch::kFloat32), test::tensors(h, torch::kFloat32));
  EXPECT_EQ(out.logabs.scalar_type(), torch::kFloat32);
  EXPECT_TRUE(torch::isfinite(out.logabs).all().item<bool>());
}

TEST(ModelRegistry, UnknownAnsatzNamesTheKey) {
  ModelConfig c;
  c.type = "nosuchnet";
  const System s = load_molecule("he", test::molecules_dir());
  try {
    model_registry().create(c, s);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("model.type"), std::string::npos);
  }
}
