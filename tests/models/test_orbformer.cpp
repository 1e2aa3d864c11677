/// Orbformer: antisymmetry, equivariance, invariances, one set of weights for several
/// molecules, orbitals for pretraining, parameter counts, refused molecules.
#include <gtest/gtest.h>

#include <cmath>

#include "common/test_util.hpp"
#include "core/errors.hpp"
#include "models/determinant_balance.hpp"
#include "models/ferminet/ferminet.hpp"
#include "models/orbformer/orbformer.hpp"
#include "models/registry.hpp"

using namespace nnvmc;

namespace {

System molecule(const std::string& name) { return load_molecule(name, test::molecules_dir()); }
}  // namespace

TEST(Orbformer, ExchangeOfSameSpinElectronsFlipsSignAndKeepsModulusInEveryMolecule) {
  Orbformer net(test::small_orbformer());
  test::perturb_parameters(net, 0.1, 3);
  torch::NoGradGuard ng;
  for (const char* name : {"lih", "li", "h2o"}) {
    const System s = molecule(name);
    const auto sys = test::tensors(s);
    const auto r = test::random_positions(s, 8);
    const auto a = net.forward(r, sys);
    int checked = 0;
    for (const auto& [lo, hi] : sys.spin_ranges())
      for (int64_t i = lo; i + 1 < hi; i += 2) {
        const auto b = net.forward(test::swap_electrons(r, i, i + 1), sys);
        EXPECT_LE((a.logabs - b.logabs).abs().max().item<double>(), 1e-10) << name << " swap " << i;
        EXPECT_TRUE(torch::equal(a.sign, -b.sign)) << name << " swap " << i;
        ++checked;
      }
    EXPECT_GT(checked, 0) << name;
  }
}

TEST(Orbformer, ElectronStreamIsEquivariantUnderSameSpinPermutations) {
  Orbformer net(test::small_orbformer());
  test::perturb_parameters(net, 0.1, 4);
  const System s = molecule("h2o");  // 5 up, 5 down
  const auto sys = test::tensors(s);
  const auto r = test::random_positions(s, 4);
  const auto perm = torch::tensor({3, 0, 4, 1, 2, 9, 7, 5, 8, 6}, torch::kLong);  // within each spin
  torch::NoGradGuard ng;
  const auto h = net.electron_features(r, sys), hp = net.electron_features(r.index_select(1, perm), sys);
  EXPECT_EQ(h.sizes(), (std::vector<int64_t>{4, 10, 8}));
  EXPECT_LE((hp - h.index_select(1, perm)).abs().max().item<double>(), 1e-12);
}

TEST(Orbformer, OneSetOfWeightsEvaluatesH2LiHAndH2OWithCorrectSymmetry) {
  // Different electron and nucleus counts, one model, in one process; evaluating one molecule
  // leaves no state behind that changes another's values.
  Orbformer net(test::small_orbformer());
  test::perturb_parameters(net, 0.1, 5);
  torch::NoGradGuard ng;
  const auto h2 = molecule("h2"), lih = molecule("lih"), h2o = molecule("h2o");
  const auto r_h2 = test::random_positions(h2, 6, 1), r_h2o = test::random_positions(h2o, 6, 2);
  const auto first = net.forward(r_h2, test::tensors(h2));
  for (const auto* s : {&h2, &lih, &h2o}) {
    const auto r = test::random_positions(*s, 6, 3);
    const auto out = net.forward(r, test::tensors(*s));
    EXPECT_EQ(out.logabs.sizes(), (std::vector<int64_t>{6})) << s->name;
    EXPECT_TRUE(torch::isfinite(out.logabs).all().item<bool>()) << s->name;
  }
  const auto again = net.forward(r_h2, test::tensors(h2));
  EXPECT_TRUE(torch::equal(first.logabs, again.logabs));
  // Antisymmetry of H2O with the same weights: up 0↔4, down 6↔9.
  const auto a = net.forward(r_h2o, test::tensors(h2o));
  for (auto [i, j] : std::vector<std::pair<int, int>>{{0, 4}, {6, 9}}) {
    const auto b = net.forward(test::swap_electrons(r_h2o, i, j), test::tensors(h2o));
    EXPECT_LE((a.logabs - b.logabs).abs().max().item<double>(), 1e-10);
    EXPECT_TRUE(torch::equal(a.sign, -b.sign));
  }
  // Swapping the two electrons of H2 (opposite spins) is not a symmetry of ψ(r; spins).
  const auto b = net.forward(test::swap_electrons(r_h2, 0, 1), test::tensors(h2));
  EXPECT_GT((first.logabs - b.logabs).abs().max().item<double>(), 1e-6);
}

TEST(Orbformer, TranslationInvariantButNotRotationInvariantAsInOneqmc) {
  // Only differences of positions enter, so translating electrons and nuclei together leaves
  // ψ unchanged. The features use Cartesian components (electron–nucleus vectors, their
  // nucleus-dependent projections, nucleus–nucleus vectors), so ψ is not rotation invariant;
  // oneqmc relies on rotation augmentation of the training structures instead.
  Orbformer net(test::small_orbformer());
  test::perturb_parameters(net, 0.1, 6);
  const System s = molecule("h2o");
  const auto sys = test::tensors(s);
  const auto r = test::random_positions(s, 6);
  torch::NoGradGuard ng;
  const auto shift = torch::tensor({0.3, -1.2, 0.7}, torch::kFloat64);
  auto moved = sys;
  moved.nuclei = sys.nuclei + shift;
  const auto a = net.forward(r, sys), b = net.forward(r + shift, moved);
  EXPECT_LE((a.logabs - b.logabs).abs().max().item<double>(), 1e-11);
  EXPECT_TRUE(torch::equal(a.sign, b.sign));
  const double c = std::cos(0.7), si = std::sin(0.7);
  const auto rot = torch::tensor({{c, -si, 0.0}, {si, c, 0.0}, {0.0, 0.0, 1.0}}, torch::kFloat64);
  auto rotated = sys;
  rotated.nuclei = torch::matmul(sys.nuclei, rot.t());
  const auto d = net.forward(torch::matmul(r, rot.t()), rotated);
  EXPECT_GT((a.logabs - d.logabs).abs().max().item<double>(), 1e-6);
}

TEST(Orbformer, RelabellingTheNucleiOfANeutralMoleculeKeepsTheModulus) {
  // Orbital o is the o-th atomic slot in nucleus order: relabelling the nuclei permutes the
  // orbitals (columns of every determinant alike), so |ψ| is unchanged and the sign may flip.
  Orbformer net(test::small_orbformer());
  test::perturb_parameters(net, 0.1, 7);
  const System s = molecule("h2o");
  System t = s;
  std::swap(t.atoms[0], t.atoms[2]);  // H, H, O
  const auto r = test::random_positions(s, 6);
  torch::NoGradGuard ng;
  const auto a = net.forward(r, test::tensors(s)), b = net.forward(r, test::tensors(t));
  EXPECT_LE((a.logabs - b.logabs).abs().max().item<double>(), 1e-10);
  EXPECT_TRUE(torch::equal(a.sign, b.sign) || torch::equal(a.sign, -b.sign));
}

TEST(Orbformer, OrbitalsTimesJastrowGiveTheWavefunction) {
  Orbformer net(test::small_orbformer(4));
  test::perturb_parameters(net, 0.1, 8);
  const System s = molecule("lih");
  const auto sys = test::tensors(s);
  const auto r = test::random_positions(s, 5);
  torch::NoGradGuard ng;
  const auto phi = net.orbitals(r, sys);
  EXPECT_EQ(phi.sizes(), (std::vector<int64_t>{5, 4, 4, 4}));
  const auto psi = torch::linalg_det(phi).sum(1);
  const auto out = net.forward(r, sys);
  EXPECT_LE((out.logabs - psi.abs().log()).abs().max().item<double>(), 1e-10);
  EXPECT_TRUE(torch::equal(out.sign, psi.sign()));
}

TEST(Orbformer, DefaultSizeHasThePublishedParameterCount) {
  // oneqmc model card: 3,032,938 parameters (OrbformerSE, elements up to F, 8 envelopes).
  torch::manual_seed(0);
  Orbformer net{OrbformerOptions{}};
  EXPECT_EQ(net.parameter_count(), 3032938);
}

TEST(Orbformer, IsTransferableAndRefusesUnsupportedMolecules) {
  Orbformer net(test::small_orbformer());  // H–O
  EXPECT_TRUE(net.transferable());
  EXPECT_NO_THROW(net.check_system(test::tensors(molecule("h2o"))));
  System f2;
  f2.atoms = {Atom{9, {0, 0, 0}}, Atom{9, {0, 0, 2.7}}};
  EXPECT_THROW(net.check_system(test::tensors(f2)), InputError);
  System anion = molecule("h");
  anion.charge = -1;
  anion.spin = 0;
  EXPECT_THROW(net.check_system(test::tensors(anion)), InputError);  // more electrons than slots
  ModelConfig c;
  c.type = "orbformer";
  c.orbformer = test::small_orbformer();
  c.orbformer.elements = "H-Li";
  EXPECT_THROW(model_registry().create(c, molecule("h2o")), InputError);
  c.orbformer.elements = "H-Xx";
  EXPECT_THROW(c.orbformer.max_atomic_number(), ConfigError);
}

TEST(Orbformer, WorksForOneElectronAndFloat32) {
  Orbformer net(test::small_orbformer());
  torch::NoGradGuard ng;
  const System h = molecule("h");
  const auto one = net.forward(test::random_positions(h, 4), test::tensors(h));
  EXPECT_TRUE(torch::isfinite(one.logabs).all().item<bool>());
  net.to(torch::kFloat32);
  const System s = molecule("lih");
  const auto out = net.forward(test::random_positions(s, 4).to(torch::kFloat32), test::tensors(s, torch::kFloat32));
  EXPECT_EQ(out.logabs.scalar_type(), torch::kFloat32);
  EXPECT_TRUE(torch::isfinite(out.logabs).all().item<bool>());
}

TEST(Orbformer, DeterminantBalancePenaltyIsBoundedBelowByItsEqualDeterminantValue) {
  // P = −σ mean log p_k ≥ σ log K, with equality iff the K determinants are equal in size:
  // one determinant gives exactly 0; several unequal ones more than σ log K.
  const System s = molecule("lih");
  const auto sys = test::tensors(s);
  const auto r = test::random_positions(s, 8);
  Orbformer one(test::small_orbformer(1));
  EXPECT_NEAR(determinant_balance_penalty(one, r, sys, 2.0).item<double>(), 0.0, 1e-12);
  Orbformer net(test::small_orbformer(4));
  test::perturb_parameters(net, 0.3, 9);
  const auto p = determinant_balance_penalty(net, r, sys, 2.0);
  EXPECT_GT(p.item<double>(), 2.0 * std::log(4.0));
  p.backward();
  double grad = 0;
  for (const auto& q : net.parameters())
    if (q.grad().defined()) grad += q.grad().abs().sum().item<double>();
  EXPECT_GT(grad, 0.0);
  FermiNet fn(test::small_ferminet(), s);
  EXPECT_FALSE(determinant_balance_penalty(fn, r, sys, 2.0).defined());
}
