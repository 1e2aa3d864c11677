/// PauliNet: antisymmetry, reduction to the (cusp-corrected) Hartree–Fock determinant times the
/// electronic cusp factor, geometry from SystemTensors, parameter count against DeepQMC,
/// configuration errors.
#include <gtest/gtest.h>

#include "common/test_util.hpp"
#include "core/errors.hpp"
#include "models/paulinet/paulinet.hpp"
#include "models/registry.hpp"
#include "scf/orbitals_torch.hpp"
#include "scf/scf.hpp"

using namespace nnvmc;

namespace {

/// A small network (fast in tests); seeds the parameter initialisation.
PaulinetOptions small_paulinet() {
  torch::manual_seed(0);
  PaulinetOptions o;
  o.embedding_dim = 16;
  o.kernel_dim = 8;
  o.distance_features = 8;
  o.interactions = 2;
  return o;
}

PaulinetOptions no_network(bool nuclear_cusps, bool electron_cusps) {
  PaulinetOptions o;
  o.jastrow = o.backflow = false;
  o.cusp_correction = nuclear_cusps;
  o.cusp_electrons = electron_cusps;
  return o;
}

/// γ = Σ_{i<j} −c_ij/(α(1 + α r_ij)) evaluated pair by pair. @param r [B, N, 3]
torch::Tensor gamma_direct(const torch::Tensor& r, int64_t n_up, double alpha) {
  auto g = torch::zeros({r.size(0)}, r.options());
  for (int64_t i = 0; i < r.size(1); ++i)
    for (int64_t j = i + 1; j < r.size(1); ++j) {
      const double c = (i < n_up) == (j < n_up) ? 0.25 : 0.5;
      const auto d = (r.select(1, i) - r.select(1, j)).norm(2, -1);
      g = g - c / (alpha * (1 + alpha * d));
    }
  return g;
}

/// Walkers with every electron at least `min_dist` from every nucleus.
torch::Tensor far_from_nuclei(const System& s, int64_t b, double min_dist, uint64_t seed) {
  auto r = test::random_positions(s, b, seed);
  const auto nuc = test::tensors(s).nuclei;
  for (int it = 0; it < 100; ++it) {
    const auto d = (r.unsqueeze(2) - nuc).norm(2, -1).amin(-1);  // [B, N]
    const auto bad = (d < min_dist).unsqueeze(-1);
    if (!bad.any().item<bool>()) break;
    r = torch::where(bad, r + 0.5 * torch::randn_like(r), r);
  }
  return r;
}

}  // namespace

TEST(PauliNet, ExchangeOfSameSpinElectronsFlipsSignAndKeepsModulus) {
  for (const char* mol : {"lih", "li"}) {  // RHF closed shell, UHF open shell
    const System s = load_molecule(mol, test::molecules_dir());
    PauliNet net(small_paulinet(), s);
    const auto r = test::random_positions(s, 12);
    torch::NoGradGuard ng;
    const auto a = net.forward(r, test::tensors(s));
    for (auto [i, j] : std::vector<std::pair<int, int>>{{0, 1}, {2, 3}}) {
      if (j >= s.n_electrons() || (i < s.n_up()) != (j < s.n_up())) continue;
      const auto b = net.forward(test::swap_electrons(r, i, j), test::tensors(s));
      EXPECT_LT((a.logabs - b.logabs).abs().max().item<double>(), 1e-10) << mol;
      EXPECT_TRUE(torch::equal(a.sign, -b.sign)) << mol;
    }
  }
}

TEST(PauliNet, OpenShellUsesUhfAndClosedShellRhf) {
  PauliNet li(small_paulinet(), load_molecule("li", test::molecules_dir()));
  PauliNet lih(small_paulinet(), load_molecule("lih", test::molecules_dir()));
  EXPECT_FALSE(li.restricted());
  EXPECT_TRUE(lih.restricted());
  EXPECT_EQ(li.n_orbitals(), 2);
}

// model.paulinet.unrestricted on a closed shell: UHF from the RHF guess stays RHF, so the
// baseline is the same Slater determinant (orbital signs may differ), with one orbital set and
// one set of cusp shifts per spin.
TEST(PauliNet, UnrestrictedBaselineOfAClosedShellIsTheRestrictedOne) {
  const System s = load_molecule("lih", test::molecules_dir());
  auto o = no_network(true, true);
  PauliNet rhf(o, s);
  o.unrestricted = true;
  PauliNet uhf(o, s);
  EXPECT_TRUE(rhf.restricted());
  EXPECT_FALSE(uhf.restricted());
  EXPECT_NEAR(uhf.hf_energy(), rhf.hf_energy(), 1e-8);
  EXPECT_EQ(uhf.parameter_counts()[3], 2 * rhf.parameter_counts()[3]);  // cusp shifts per spin
  const auto r = test::random_positions(s, 9, 5);
  torch::NoGradGuard ng;
  const auto a = rhf.forward(r, test::tensors(s)), b = uhf.forward(r, test::tensors(s));
  // the same determinant to the two SCFs' convergence (orbitals to ~1e-6, energies to 1e-8)
  EXPECT_LT((a.logabs - b.logabs).abs().max().item<double>(), 1e-5);
  const auto relative_sign = a.sign * b.sign;  // one global sign: the orbitals' phase convention
  EXPECT_TRUE(torch::equal(relative_sign, relative_sign[0].expand_as(relative_sign)));
}

// The Jastrow factor and the backflow can each be used alone (each was only ever switched off
// together with the other): each alone is a finite, antisymmetric wavefunction with its own
// parameters only.
TEST(PauliNet, JastrowAloneAndBackflowAloneAreEachAntisymmetric) {
  const System s = load_molecule("lih", test::molecules_dir());
  for (const bool jastrow : {true, false}) {
    auto o = small_paulinet();
    o.jastrow = jastrow;
    o.backflow = !jastrow;
    PauliNet net(o, s);
    const auto n = net.parameter_counts();
    EXPECT_GT(n[0], 0);
    EXPECT_EQ(n[1] > 0, jastrow);
    EXPECT_EQ(n[2] > 0, !jastrow);
    const auto r = test::random_positions(s, 6, 8);
    torch::NoGradGuard ng;
    const auto a = net.forward(r, test::tensors(s)), b = net.forward(test::swap_electrons(r, 0, 1), test::tensors(s));
    EXPECT_TRUE(torch::isfinite(a.logabs).all().item<bool>());
    EXPECT_LT((a.logabs - b.logabs).abs().max().item<double>(), 1e-10) << "jastrow " << jastrow;
    EXPECT_TRUE(torch::equal(a.sign, -b.sign)) << "jastrow " << jastrow;
  }
}

// frozen_state() names the frozen baseline's coefficients and load_frozen_state restores them
// exactly; the backflow is not invariant under a rotation of the occupied orbitals (here a
// swap), which is why checkpoints keep them.
TEST(PauliNet, FrozenOrbitalsAreItsFrozenStateAndTheBackflowIsNotInvariantUnderTheirRotation) {
  const System s = load_molecule("lih", test::molecules_dir());
  PauliNet net(small_paulinet(), s);
  auto state = net.frozen_state();
  ASSERT_EQ(state.size(), 1u);
  const auto r = test::random_positions(s, 6, 2);
  torch::NoGradGuard ng;
  const auto before = net.forward(r, test::tensors(s)).logabs;
  state["mo_coefficients"] = state["mo_coefficients"].flip(1).contiguous();
  net.load_frozen_state(state);
  EXPECT_TRUE(torch::equal(net.frozen_state().at("mo_coefficients"), state["mo_coefficients"]));
  EXPECT_GT((net.forward(r, test::tensors(s)).logabs - before).abs().max().item<double>(), 1e-6);
  state["mo_coefficients"] = state["mo_coefficients"].flip(1).contiguous();
  net.load_frozen_state(state);
  EXPECT_TRUE(torch::equal(net.forward(r, test::tensors(s)).logabs, before));
  EXPECT_THROW(net.load_frozen_state({}), CheckpointError);
  state["mo_coefficients"] = torch::zeros({2, 2}, torch::kFloat64);
  EXPECT_THROW(net.load_frozen_state(state), CheckpointError);
  auto trained = small_paulinet();
  trained.freeze_baseline = false;  // then the coefficients are parameters, not frozen state
  EXPECT_TRUE(PauliNet(trained, s).frozen_state().empty());
}

TEST(PauliNet, WithoutNetworkAndCuspsIsTheHartreeFockDeterminant) {
  const System s = load_molecule("lih", test::molecules_dir());
  PauliNet net(no_network(false, false), s);
  EXPECT_TRUE(net.parameters().empty());
  const auto basis = scf::make_basis("6-311g", s);
  const auto hf = scf::run_rhf(s, basis);
  EXPECT_NEAR(net.hf_energy(), hf.energy, 1e-10);
  const auto ref = scf::occupied_orbitals(hf, basis).log_slater(test::random_positions(s, 9, 3));
  torch::NoGradGuard ng;
  const auto out = net.forward(test::random_positions(s, 9, 3), test::tensors(s));
  EXPECT_LT((out.logabs - ref.second).abs().max().item<double>(), 1e-11);
  EXPECT_TRUE(torch::equal(out.sign, ref.first));
}

TEST(PauliNet, WithoutNetworkIsCuspCorrectedHartreeFockTimesTheElectronCuspFactor) {
  const System s = load_molecule("lih", test::molecules_dir());
  PauliNet plain(no_network(false, false), s), ee(no_network(false, true), s), full(no_network(true, true), s);
  const auto sys = test::tensors(s);
  torch::NoGradGuard ng;
  // γ exactly as defined; outside the correction spheres (r_c = 1/Z) the nuclear correction
  // changes nothing.
  const auto r = far_from_nuclei(s, 8, 1.05, 4);
  const auto g = gamma_direct(r, s.n_up(), 10.0);
  const auto base = plain.forward(r, sys).logabs;
  EXPECT_LT((ee.forward(r, sys).logabs - base - g).abs().max().item<double>(), 1e-12);
  EXPECT_LT((full.forward(r, sys).logabs - base - g).abs().max().item<double>(), 1e-12);
  // Inside a sphere it does change ψ.
  auto inside = r.clone();
  inside[0][0] = sys.nuclei[0] + torch::tensor({0.05, 0.1, -0.08}, torch::kFloat64);
  const auto diff = full.forward(inside, sys).logabs - ee.forward(inside, sys).logabs;
  EXPECT_GT(diff.abs()[0].item<double>(), 1e-4);
  EXPECT_LT(diff.slice(0, 1).abs().max().item<double>(), 1e-12);
}

TEST(PauliNet, SeesTheGeometryItIsGivenAndIsTranslationInvariant) {
  const System s = load_molecule("lih", test::molecules_dir());
  PauliNet net(small_paulinet(), s);
  const auto r = test::random_positions(s, 6);
  const auto sys = test::tensors(s);
  auto moved = sys;
  const auto shift = torch::tensor({0.3, -1.2, 0.7}, torch::kFloat64);
  moved.nuclei = sys.nuclei + shift;
  torch::NoGradGuard ng;
  const auto a = net.forward(r, sys), b = net.forward(r + shift, moved), c = net.forward(r, moved);
  EXPECT_LT((a.logabs - b.logabs).abs().max().item<double>(), 1e-10);
  EXPECT_TRUE(torch::equal(a.sign, b.sign));
  EXPECT_GT((a.logabs - c.logabs).abs().max().item<double>(), 1e-3);
}

TEST(PauliNet, ParameterCountOnLiHMatchesDeepQmcArchitecture) {
  // DeepQMC 0.3 PauliNet on LiH (defaults, one determinant): X [1, 128], Y [2, 64]; per layer
  // three filters 32→45→64 (bias on the first), h 128→64, three g 64→128 (no biases);
  // Jastrow 128→25→5→1, backflow 128→32→8→2 (last with bias); cusp shifts [2, 2].
  torch::manual_seed(0);
  PauliNet net(PaulinetOptions{}, load_molecule("lih", test::molecules_dir()));
  const auto n = net.parameter_counts();
  const int64_t layer = 3 * (32 * 45 + 45 + 45 * 64) + 128 * 64 + 3 * 64 * 128;
  EXPECT_EQ(n[0], 128 + 2 * 64 + 3 * layer);
  EXPECT_EQ(n[1], 128 * 25 + 25 + 25 * 5 + 5 + 5);
  EXPECT_EQ(n[2], 128 * 32 + 32 + 32 * 8 + 8 + 8 * 2 + 2);
  EXPECT_EQ(n[3], 4);
  EXPECT_EQ(n[4], 0);  // frozen baseline
  int64_t total = 0;
  for (const auto& p : net.parameters()) total += p.numel();
  EXPECT_EQ(total, n[0] + n[1] + n[2] + n[3]);
}

TEST(PauliNet, UnfrozenBaselineTrainsTheMoCoefficients) {
  auto o = small_paulinet();
  o.freeze_baseline = false;
  PauliNet net(o, load_molecule("lih", test::molecules_dir()));
  EXPECT_EQ(net.parameter_counts()[4], 16 * 2);  // 6-311G on LiH: 16 functions, 2 orbitals
  const System s = load_molecule("lih", test::molecules_dir());
  auto r = test::random_positions(s, 3);
  r[0][0] = torch::tensor({0.05, 0.04, -0.03}, torch::kFloat64);       // inside Li's sphere
  r[1][2] = torch::tensor({0.1, -0.2, 3.015 + 0.3}, torch::kFloat64);  // inside H's sphere
  const auto out = net.forward(r, test::tensors(s));
  out.logabs.sum().backward();
  for (const auto& p : net.named_parameters())
    if (p.key() == "mo_coefficients" || p.key() == "cusp_shift") {
      EXPECT_GT(p.value().grad().abs().max().item<double>(), 0) << p.key();
    }
}

TEST(PauliNet, WorksInFloat32) {
  const System s = load_molecule("lih", test::molecules_dir());
  PauliNet net(small_paulinet(), s);
  net.to(torch::kFloat32);
  const auto out = net.forward(test::random_positions(s, 4).to(torch::kFloat32), test::tensors(s, torch::kFloat32));
  EXPECT_EQ(out.logabs.scalar_type(), torch::kFloat32);
  EXPECT_TRUE(torch::isfinite(out.logabs).all().item<bool>());
}

TEST(PauliNet, RegisteredAndPretrainingIsRefusedNamingTheKey) {
  ModelConfig c;
  c.type = "paulinet";
  c.paulinet = small_paulinet();
  EXPECT_EQ(model_registry().create(c, load_molecule("he", test::molecules_dir()))->type(), "paulinet");
  try {
    parse_config("model: {type: paulinet}\npretrain: {steps: 10}\n", {}, "t.yaml");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("pretrain.steps"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(parse_config("model: {type: paulinet}\n", {}, "t.yaml"));
}

TEST(PauliNet, UnknownBasisIsAnInputError) {
  auto o = small_paulinet();
  o.basis = "no-such-basis";
  EXPECT_THROW(PauliNet(o, load_molecule("lih", test::molecules_dir())), InputError);
}
