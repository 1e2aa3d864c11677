#include <gtest/gtest.h>
#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <limits>

#include "common/test_util.hpp"
#include "models/analytic/hydrogenic.hpp"
#include "sampler/metropolis.hpp"
#include "train/blocking.hpp"

using namespace nnvmc;

namespace {
SamplerOptions options(int walkers) {
  SamplerOptions o;
  o.walkers = walkers;
  o.step_size = 0.5;
  return o;
}

/// LiH with a hydrogenic product wavefunction, and samplers of 32 walkers on it.
struct LiHChain {
  System s = load_molecule("lih", test::molecules_dir());
  Hydrogenic wf{s, 1.0};
  SystemTensors sys = test::tensors(s);
  LogAbsFn logabs = [this](const torch::Tensor& r) { return wf.forward(r, sys).logabs; };
  MetropolisSampler sampler(std::uint64_t seed) const {
    return MetropolisSampler(options(32), s, torch::TensorOptions().dtype(torch::kFloat64), seed);
  }
};
}  // namespace

TEST(Metropolis, ReproducesMomentsOfTheHydrogenGroundStateDensity) {
  // |ψ|² ∝ exp(−2r): <r> = 3/2, <r²> = 3 (bohr).
  const System h = load_molecule("h", test::molecules_dir());
  Hydrogenic wf(h, 1.0);
  const auto sys = test::tensors(h);
  const LogAbsFn logabs = [&](const torch::Tensor& r) { return wf.forward(r, sys).logabs; };
  MetropolisSampler sampler(options(2000), h, torch::TensorOptions().dtype(torch::kFloat64), 42);
  sampler.initialize(logabs);
  for (int i = 0; i < 20; ++i) sampler.adapt(sampler.run(logabs, 10));
  std::vector<double> r1, r2;
  for (int i = 0; i < 100; ++i) {
    sampler.run(logabs, 5);
    const auto d = sampler.positions().norm(2, -1).squeeze(1);
    r1.push_back(d.mean().item<double>());
    r2.push_back(d.square().mean().item<double>());
  }
  const auto m1 = blocking_analysis(r1), m2 = blocking_analysis(r2);
  EXPECT_NEAR(m1.mean, 1.5, 4 * m1.error + 1e-3) << "±" << m1.error;
  EXPECT_NEAR(m2.mean, 3.0, 4 * m2.error + 2e-3) << "±" << m2.error;
  EXPECT_LT(m1.error, 0.01);
}

TEST(Metropolis, StepSizeAdaptsTowardTargetAcceptance) {
  const System h = load_molecule("h", test::molecules_dir());
  Hydrogenic wf(h, 1.0);
  const auto sys = test::tensors(h);
  const LogAbsFn logabs = [&](const torch::Tensor& r) { return wf.forward(r, sys).logabs; };
  auto o = options(500);
  o.step_size = 0.01;  // far too small: acceptance ≈ 1
  MetropolisSampler sampler(o, h, torch::TensorOptions().dtype(torch::kFloat64), 1);
  sampler.initialize(logabs);
  double acc = 0;
  for (int i = 0; i < 60; ++i) sampler.adapt(acc = sampler.run(logabs, 5));
  EXPECT_NEAR(acc, 0.5, 0.1);
  EXPECT_GT(sampler.step_size(), 0.3);
}

TEST(Metropolis, RestoredStateContinuesTheSameChain) {
  const LiHChain c;
  MetropolisSampler a = c.sampler(5);
  a.initialize(c.logabs);
  a.run(c.logabs, 3);
  const SamplerState saved = a.state();
  a.run(c.logabs, 4);
  MetropolisSampler b = c.sampler(999);
  b.set_state(saved);
  b.run(c.logabs, 4);
  EXPECT_TRUE(torch::equal(a.positions(), b.positions()));
}

// A checkpoint of an older nnvmc holds an mt19937 state: the chain continues (deterministically,
// from a counter derived from that state) instead of failing.
TEST(Metropolis, AnOlderGeneratorStateContinuesDeterministically) {
  const LiHChain chain;
  MetropolisSampler a = chain.sampler(5);
  a.initialize(chain.logabs);
  SamplerState old = a.state();
  old.rng_state = at::make_generator<at::CPUGeneratorImpl>(3).get_state();
  MetropolisSampler b = chain.sampler(5), c = chain.sampler(5);
  b.set_state(old);
  c.set_state(old);
  EXPECT_GE(b.draws(), std::uint64_t(1) << 40);  // far from the counters of a new chain
  b.run(chain.logabs, 3);
  c.run(chain.logabs, 3);
  a.run(chain.logabs, 3);  // the new chain's own draws 1-3
  EXPECT_TRUE(torch::equal(b.positions(), c.positions()));
  EXPECT_FALSE(torch::equal(b.positions(), a.positions()));
}

TEST(Metropolis, InitialElectronsAreSpinBalancedOnEachAtom) {
  const System s = load_molecule("lih", test::molecules_dir());  // Li (3) + H (1), 2 up 2 down
  const auto assign = MetropolisSampler::initial_assignment(s);
  ASSERT_EQ(assign.size(), 4u);
  EXPECT_EQ(std::count(assign.begin(), assign.end(), 0), 3);  // Li keeps 3 electrons
  EXPECT_EQ(std::count(assign.begin(), assign.end(), 1), 1);
  // one up and one down electron on Li at least
  EXPECT_EQ(assign[0], 0);
  EXPECT_EQ(assign[2], 0);
}

// A cation's missing electron comes off the atom that gives one up most easily, whatever the
// atoms' order, and an anion's extra one goes where it is bound most: LiH⁺ keeps H's electron
// on H (the last atom lost it, and the hf ansatz of [Li, H] evaluated 150 mEh above its own
// E_HF after hundreds of steps), OH⁻ puts the extra electron on O.
TEST(Metropolis, ChargedMoleculesStartWithTheirElectronsOnTheRightAtoms) {
  const auto per_atom = [](const System& s) {
    std::vector<int> n(s.atoms.size());
    for (int a : MetropolisSampler::initial_assignment(s)) ++n[a];
    return n;
  };
  System lih_plus;
  lih_plus.atoms = {Atom{3, {0, 0, 0}}, Atom{1, {0, 0, 3.015}}};
  lih_plus.charge = 1;
  lih_plus.spin = 1;
  EXPECT_EQ(per_atom(lih_plus), (std::vector<int>{2, 1}));
  // Li's two electrons are one of each spin (electrons 0, 1 up; 2 down): H has the second up one
  EXPECT_EQ(MetropolisSampler::initial_assignment(lih_plus), (std::vector<int>{0, 1, 0}));
  std::swap(lih_plus.atoms[0], lih_plus.atoms[1]);
  EXPECT_EQ(per_atom(lih_plus), (std::vector<int>{1, 2}));
  System oh_minus;
  oh_minus.atoms = {Atom{1, {0, 0, 1.8}}, Atom{8, {0, 0, 0}}};
  oh_minus.charge = -1;
  EXPECT_EQ(per_atom(oh_minus), (std::vector<int>{1, 9}));
  System li2_plus2;  // two holes on two equal atoms: one each
  li2_plus2.atoms = {Atom{3, {0, 0, 0}}, Atom{3, {0, 0, 5}}};
  li2_plus2.charge = 2;
  EXPECT_EQ(per_atom(li2_plus2), (std::vector<int>{2, 2}));
}

// Fresh walkers put each electron at its shell's hydrogen-like mean radius 1.5 n²/Z_eff
// (Slater's screening): O's 1s pair at 0.195 bohr, its second shell at 1.32, so chains of
// heavy atoms do not start with their core electrons a bohr away from the nucleus.
TEST(Metropolis, FreshElectronsStartAtTheMeanRadiusOfTheirShell) {
  System o;
  o.name = "o";
  o.atoms = {Atom{8, {0.5, -1.0, 2.0}}};
  o.spin = 2;  // 5 up, 3 down
  const auto place = MetropolisSampler::initial_placement(o);
  ASSERT_EQ(place.size(), 8u);
  EXPECT_NEAR(MetropolisSampler::shell_width(1, 1, 0, 0), 1.5 / (2 * std::sqrt(2 / M_PI)), 1e-12);  // H: 0.94
  const LogAbsFn flat = [](const torch::Tensor& r) { return torch::zeros({r.size(0)}, r.options()); };
  MetropolisSampler sampler(options(20000), o, torch::TensorOptions().dtype(torch::kFloat64), 5);
  sampler.initialize(flat);
  const auto centre = torch::tensor({0.5, -1.0, 2.0}, torch::kFloat64);
  const auto radius = (sampler.positions() - centre).norm(2, -1).mean(0);  // [8]
  int core = 0;
  for (int i = 0; i < 8; ++i) {
    // the first electron of each spin fills 1s (Z_eff = 8 − 0.30), the others 2s2p (8 − 0.85·2 − 0.35·5);
    // with spin 2 on O, electrons 0-4 are up and 5-7 down
    const bool in_core = i == 0 || i == 5;
    core += in_core;
    const double expected = in_core ? 1.5 / 7.7 : 1.5 * 4 / 4.55;
    EXPECT_NEAR(radius[i].item<double>(), expected, 0.02 * expected) << "electron " << i;
  }
  EXPECT_EQ(core, 2);
}

// A proposal onto a node (log|ψ| = −inf, e.g. a singular orbital matrix) or to a NaN is never
// accepted, and a walker that sits on a node itself leaves it with its next finite proposal.
TEST(Metropolis, NonFiniteProposalsAreRejectedAndAWalkerOnANodeMovesOff) {
  const System h = load_molecule("h", test::molecules_dir());
  Hydrogenic wf(h, 1.0);
  const auto sys = test::tensors(h);
  MetropolisSampler sampler(options(6), h, torch::TensorOptions().dtype(torch::kFloat64), 3);
  const LogAbsFn finite = [&](const torch::Tensor& r) { return wf.forward(r, sys).logabs; };
  sampler.initialize(finite);
  const auto start = sampler.positions().clone();
  // Walkers 0-2 propose to a node, 3-5 to NaN: nothing moves.
  const LogAbsFn bad = [&](const torch::Tensor& r) {
    auto l = wf.forward(r, sys).logabs.clone();
    l.slice(0, 0, 3).fill_(-std::numeric_limits<double>::infinity());
    l.slice(0, 3, 6).fill_(std::nan(""));
    return l;
  };
  EXPECT_EQ(sampler.run(bad, 5), 0.0);
  EXPECT_TRUE(torch::equal(sampler.positions(), start));
  // Walker 1 is on a node: the next finite proposal is accepted whatever u is.
  const LogAbsFn node_at_start = [&](const torch::Tensor& r) {
    auto l = wf.forward(r, sys).logabs.clone();
    if (torch::equal(r, start)) l[1] = -std::numeric_limits<double>::infinity();
    return l;
  };
  sampler.refresh(node_at_start);
  EXPECT_FALSE(std::isfinite(sampler.logabs()[1].item<double>()));
  sampler.run(finite, 1);
  EXPECT_FALSE(torch::equal(sampler.positions()[1], start[1]));
  EXPECT_TRUE(std::isfinite(sampler.logabs()[1].item<double>()));
}

// The MH step as a CUDA device captures it (counter, step size, positions and log|ψ| in device
// buffers), run on the CPU in the emulated graph mode: the same chain as eager steps, through
// step-size adaptation, parameter changes with refresh(), set_state() and a new function.
TEST(Metropolis, GraphedStepsFollowTheSameChainAsEagerSteps) {
  LiHChain c;
  auto scale = torch::ones({}, torch::kFloat64);  // a "parameter", changed in place
  const LogAbsFn logabs = [&c, scale](const torch::Tensor& r) { return scale * c.logabs(r); };
  const parallel::GraphKey key = {&c, scale.data_ptr()};
  auto eager = c.sampler(5), graphed = c.sampler(5);
  graphed.set_graph_mode(parallel::GraphMode::emulated);
  eager.initialize(logabs);
  graphed.initialize(logabs);
  const auto same = [&](const char* where) {
    EXPECT_TRUE(torch::equal(eager.positions(), graphed.positions())) << where;
    EXPECT_TRUE(torch::equal(eager.logabs(), graphed.logabs())) << where;
    EXPECT_EQ(eager.draws(), graphed.draws()) << where;
    EXPECT_EQ(eager.step_size(), graphed.step_size()) << where;
  };
  for (int block = 0; block < 3; ++block) {
    const double a = eager.run(logabs, 4, key), b = graphed.run(logabs, 4, key);
    EXPECT_EQ(a, b);
    eager.adapt(a);
    graphed.adapt(b);
    same("adapted blocks");
  }
  ASSERT_NE(graphed.step_graph(), nullptr);
  EXPECT_EQ(graphed.step_graph()->captures(), 1);
  EXPECT_EQ(graphed.step_graph()->replays(), 11);  // 12 steps: a warm-up, then a capture and 11 replays

  // A state taken now is not overwritten by later graphed steps (the buffers are reused).
  const auto saved = graphed.state();
  const auto saved_r = saved.r.clone();
  scale.fill_(0.8);  // parameters change in place: same key, the graph reads the new value
  eager.refresh(logabs);
  graphed.refresh(logabs);
  EXPECT_EQ(eager.run(logabs, 3, key), graphed.run(logabs, 3, key));
  same("after an in-place parameter change");
  EXPECT_TRUE(torch::equal(saved.r, saved_r));

  // Back to the saved state (a retried iteration) on both.
  eager.set_state(saved);
  graphed.set_state(saved);
  EXPECT_EQ(eager.run(logabs, 2, key), graphed.run(logabs, 2, key));
  same("after set_state");

  // Another function under another key: captured again, and the chain follows it.
  const LogAbsFn half = [&c](const torch::Tensor& r) { return 0.5 * c.logabs(r); };
  const parallel::GraphKey half_key = {&c, &half};
  graphed.refresh(half);
  eager.refresh(half);
  EXPECT_EQ(eager.run(half, 3, half_key), graphed.run(half, 3, half_key));
  same("another function");
  EXPECT_EQ(graphed.step_graph()->captures(), 2);
}
