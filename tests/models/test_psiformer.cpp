/// Psiformer: symmetry, orbitals, Jastrow factor, parameter count, registry.
#include <gtest/gtest.h>

#include "common/test_util.hpp"
#include "core/errors.hpp"
#include "models/psiformer/psiformer.hpp"
#include "models/registry.hpp"

using namespace nnvmc;

namespace {

double max_abs(const torch::Tensor& t) { return t.abs().max().item<double>(); }

/// J = Σ_{i<j} −c α²/(α + r_ij) by an explicit loop over pairs (c = ¼ same spin, ½ opposite).
torch::Tensor simple_ee_by_hand(const torch::Tensor& r, int64_t n_up, double a_same, double a_opp) {
  auto j = torch::zeros({r.size(0)}, r.options());
  for (int64_t a = 0; a < r.size(1); ++a)
    for (int64_t b = a + 1; b < r.size(1); ++b) {
      const bool same = (a < n_up) == (b < n_up);
      const double alpha = same ? a_same : a_opp, c = same ? 0.25 : 0.5;
      const auto d = (r.select(1, a) - r.select(1, b)).norm(2, -1);
      j = j - c * alpha * alpha / (alpha + d);
    }
  return j;
}

void set_parameter(torch::nn::Module& m, const std::string& name, double value) {
  torch::NoGradGuard ng;
  m.named_parameters()[name].fill_(value);
}
}  // namespace

TEST(Psiformer, ExchangeOfSameSpinElectronsFlipsSignAndKeepsModulus) {
  const System s = load_molecule("lih", test::molecules_dir());  // 2 up, 2 down
  Psiformer net(test::small_psiformer(), s);
  const auto r = test::random_positions(s, 16);
  torch::NoGradGuard ng;
  const auto a = net.forward(r, test::tensors(s));
  for (auto [i, j] : std::vector<std::pair<int, int>>{{0, 1}, {2, 3}}) {
    const auto b = net.forward(test::swap_electrons(r, i, j), test::tensors(s));
    EXPECT_LE(max_abs(a.logabs - b.logabs), 1e-10);
    EXPECT_TRUE(torch::equal(a.sign, -b.sign));
  }
}

TEST(Psiformer, AttentionStreamIsPermutationEquivariantWithinEachSpin) {
  // Permuting same-spin electrons permutes the per-electron features; exchanging an up and a
  // down electron does not (the spin is an input feature).
  const System s = load_molecule("h2o", test::molecules_dir());  // 5 up, 5 down
  Psiformer net(test::small_psiformer(), s);
  const auto r = test::random_positions(s, 4);
  const auto perm = torch::tensor({3, 0, 4, 1, 2, 6, 9, 5, 8, 7}, torch::kLong);
  torch::NoGradGuard ng;
  const auto h = net.electron_features<torch::Tensor>(r, test::tensors(s));  // [B, N, D]
  const auto hp = net.electron_features<torch::Tensor>(r.index_select(1, perm), test::tensors(s));
  EXPECT_EQ(h.sizes(), (std::vector<int64_t>{4, 10, net.width()}));
  EXPECT_LE(max_abs(hp - h.index_select(1, perm)), 1e-12);
  const auto hx = net.electron_features<torch::Tensor>(test::swap_electrons(r, 0, 5), test::tensors(s));
  EXPECT_GT(max_abs(hx - test::swap_electrons(h, 0, 5)), 1e-3);
}

TEST(Psiformer, OrbitalsHaveShapeBKNN) {
  const System s = load_molecule("lih", test::molecules_dir());
  Psiformer net(test::small_psiformer(1, 2, 4, 3), s);
  const auto phi = net.orbitals(test::random_positions(s, 5), test::tensors(s));
  EXPECT_EQ(phi.sizes(), (std::vector<int64_t>{5, 3, 4, 4}));
}

TEST(Psiformer, LogAbsEqualsLogOfSummedDeterminantsOfItsOrbitals) {
  // orbitals() carries exp(J/N) on every entry, so Σ_k det is ψ including the Jastrow factor.
  const System s = load_molecule("li", test::molecules_dir());  // 2 up, 1 down
  Psiformer net(test::small_psiformer(2, 2, 4, 3), s);
  const auto r = test::random_positions(s, 7);
  torch::NoGradGuard ng;
  const auto psi = torch::linalg_det(net.orbitals(r, test::tensors(s))).sum(1);
  const auto out = net.forward(r, test::tensors(s));
  EXPECT_TRUE(torch::allclose(out.logabs, psi.abs().log(), 1e-10, 1e-12));
  EXPECT_TRUE(torch::equal(out.sign, psi.sign()));
}

TEST(Psiformer, JastrowIsTheSimpleEeSumOverDistinctPairs) {
  // Same network with and without the Jastrow factor: log|ψ| differs by exactly J, counted
  // over distinct pairs (no i = j terms), with the same- and opposite-spin α separately.
  for (const char* molecule : {"li", "h2o", "lih"}) {
    const System s = load_molecule(molecule, test::molecules_dir());
    auto with = test::small_psiformer();
    auto without = with;
    without.jastrow = "none";
    torch::manual_seed(3);
    Psiformer a(with, s);
    torch::manual_seed(3);
    Psiformer b(without, s);
    set_parameter(a, "jastrow_alpha_same", 0.7);
    set_parameter(a, "jastrow_alpha_opposite", 1.3);
    const auto r = test::random_positions(s, 6);
    torch::NoGradGuard ng;
    const auto j = a.forward(r, test::tensors(s)).logabs - b.forward(r, test::tensors(s)).logabs;
    EXPECT_LE(max_abs(j - simple_ee_by_hand(r, s.n_up(), 0.7, 1.3)), 1e-12) << molecule;
  }
}

TEST(Psiformer, ParameterCountAtThePaperSizeOnLiH) {
  // DeepQMC's Psiformer on LiH has 1,610,498 parameters: embedding 9×256, 4 layers of
  // q, k, v, out (4·256²) and a two-layer tanh MLP (2·(256² + 256)), orbitals 2·256·64,
  // envelopes 2·2·(2·64), two Jastrow α. Its default has no LayerNorm; the paper's LayerNorms
  // add 4 layers × 2 × (256 scale + 256 offset) = 4,096.
  const System s = load_molecule("lih", test::molecules_dir());
  auto count = [&](bool layer_norm) {
    PsiformerOptions o;
    o.layer_norm = layer_norm;
    Psiformer net(o, s);
    int64_t n = 0;
    for (const auto& p : net.parameters()) n += p.numel();
    return n;
  };
  EXPECT_EQ(count(false), 1610498);
  EXPECT_EQ(count(true), 1610498 + 4096);
}

TEST(Psiformer, SeesTheGeometryItIsGivenAndIsTranslationInvariant) {
  const System s = load_molecule("lih", test::molecules_dir());
  Psiformer net(test::small_psiformer(), s);
  const auto r = test::random_positions(s, 6);
  const auto sys = test::tensors(s);
  auto moved = sys;
  const auto shift = torch::tensor({0.3, -1.2, 0.7}, torch::kFloat64);
  moved.nuclei = sys.nuclei + shift;
  torch::NoGradGuard ng;
  const auto a = net.forward(r, sys), b = net.forward(r + shift, moved), c = net.forward(r, moved);
  EXPECT_LE(max_abs(a.logabs - b.logabs), 1e-12);
  EXPECT_TRUE(torch::equal(a.sign, b.sign));
  EXPECT_GT(max_abs(a.logabs - c.logabs), 1e-3);
}

TEST(Psiformer, WorksForOneElectronAndFloat32) {
  const System h = load_molecule("h", test::molecules_dir());
  Psiformer net(test::small_psiformer(), h);
  net.to(torch::kFloat32);
  const auto out = net.forward(test::random_positions(h, 4).to(torch::kFloat32), test::tensors(h, torch::kFloat32));
  EXPECT_EQ(out.logabs.scalar_type(), torch::kFloat32);
  EXPECT_TRUE(torch::isfinite(out.logabs).all().item<bool>());
}

TEST(Psiformer, RegistryBuildsItAndRefusesOtherAtoms) {
  ModelConfig c;
  c.type = "psiformer";
  c.psiformer = test::small_psiformer();
  const System s = load_molecule("lih", test::molecules_dir());
  const auto wf = model_registry().create(c, s);
  EXPECT_EQ(wf->type(), "psiformer");
  EXPECT_NO_THROW(wf->check_system(test::tensors(s)));
  EXPECT_THROW(wf->check_system(test::tensors(load_molecule("h2", test::molecules_dir()))), InputError);
  c.psiformer.jastrow = "pade";
  EXPECT_THROW(model_registry().create(c, s), ConfigError);
}
