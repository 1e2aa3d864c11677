#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "common/test_util.hpp"
#include "batching/held_memory.hpp"
#include "batching/peak_memory.hpp"
#include "core/errors.hpp"
#include "hamiltonian/local_energy.hpp"
#include "hamiltonian/potential.hpp"
#include "models/analytic/hydrogenic.hpp"
#include "models/ferminet/ferminet.hpp"
#include "parallel/walker_threads.hpp"

using namespace nnvmc;

namespace {
LocalEnergy make(const System& s, const std::string& method, int64_t chunk = 0) {
  HamiltonianOptions o;
  o.laplacian = method;
  return LocalEnergy(s, make_laplacian(o, 0), torch::TensorOptions().dtype(torch::kFloat64),
                     ChunkPolicy{chunk});
}
}  // namespace

TEST(LocalEnergy, ExactHydrogenGroundStateGivesMinusHalfEverywhere) {
  const System h = load_molecule("h", test::molecules_dir());
  Hydrogenic wf(h, 1.0);
  const auto r = test::random_positions(h, 64);
  for (const auto* m : {"jvp", "reverse"}) {
    const auto e = make(h, m)(wf, r).energy;
    EXPECT_LT((e + 0.5).abs().max().item<double>(), 1e-10) << m;
  }
}

TEST(LocalEnergy, HydrogenLikeIonWithWrongExponentHasAnalyticLocalEnergy) {
  // ψ = exp(−ζr) for a nucleus of charge 1: E_L = −ζ²/2 + (ζ − 1)/r.
  const System h = load_molecule("h", test::molecules_dir());
  Hydrogenic wf(h, 1.3);
  const auto r = test::random_positions(h, 32);
  const auto d = r.norm(2, -1).squeeze(1);
  const auto expected = -0.5 * 1.3 * 1.3 + 0.3 / d;
  const auto e = make(h, "jvp")(wf, r).energy;
  EXPECT_LT((e - expected).abs().max().item<double>(), 1e-10);
}

TEST(LocalEnergy, PotentialOfTwoElectronsAndTwoProtonsByHand) {
  const System h2 = load_molecule("h2", test::molecules_dir());
  const auto r = torch::tensor({{{0.0, 0.0, 0.5}, {0.0, 1.0, 0.5}}}, torch::kFloat64);
  const auto nt = test::tensors(h2);
  const double v = potential_energy(r, nt.nuclei, nt.charges, h2.nuclear_repulsion()).item<double>();
  const double expected = 1.0 / 1.0 - 1.0 / 0.5 - 1.0 / 0.9 - 1.0 / std::sqrt(1.25) -
                          1.0 / std::sqrt(1.81) + 1.0 / 1.4;
  EXPECT_NEAR(v, expected, 1e-14);
}

TEST(LocalEnergy, ResultDoesNotDependOnChunkSize) {
  const System s = load_molecule("lih", test::molecules_dir());
  FermiNet net(test::small_ferminet(), s);
  const auto r = test::random_positions(s, 10);
  const auto all = make(s, "reverse", 0)(net, r).energy;
  for (int64_t chunk : {1, 3, 7}) {
    const auto e = make(s, "reverse", chunk)(net, r).energy;
    // Same values up to float64 rounding: BLAS may block a batch of 1, 3 or 10 walkers
    // differently (alignment-dependent SIMD paths), so bitwise equality is not promised.
    const double diff = (e - all).abs().max().item<double>() / all.abs().max().item<double>();
    EXPECT_LT(diff, 1e-11) << "chunk " << chunk;
  }
}

// On two threads the walkers are split into two parts evaluated at once (each part's ops
// single-threaded); every method, with and without chunks, gives the energies of one pass
// (jvp stays one pass, LaplacianMethod::thread_safe() is false, and must still work here).
TEST(LocalEnergy, WalkerPartsOnTwoThreadsGiveTheEnergiesOfOnePass) {
  const int previous = at::get_num_threads();
  at::set_num_threads(2);
  const System s = load_molecule("lih", test::molecules_dir());
  FermiNet net(test::small_ferminet(), s);
  const auto r = test::random_positions(s, 40);  // parts of 20 walkers (≥ kMinWalkersPerThread)
  for (const auto* method : {"forward", "jvp", "reverse", "hutchinson"}) {
    parallel::set_walker_threads(false);
    const auto one_pass = make(s, method, 0)(net, r);
    parallel::set_walker_threads(true);
    for (int64_t chunk : {0, 6}) {
      const auto parts = make(s, method, chunk)(net, r);
      const double scale = one_pass.energy.abs().max().item<double>();
      EXPECT_LT((parts.energy - one_pass.energy).abs().max().item<double>() / scale, 1e-11)
          << method << " chunk " << chunk;
      EXPECT_LT((parts.kinetic - one_pass.kinetic).abs().max().item<double>() / scale, 1e-11) << method;
      EXPECT_TRUE(torch::equal(parts.potential, one_pass.potential)) << method;
    }
  }
  at::set_num_threads(previous);
}

// Hutchinson probes come from each walker's own stream (seed, evaluation, global walker index):
// chunking does not change them, a process that holds walkers [5, 10) (another rank) draws the
// same probes for them, and the next evaluation draws new ones.
TEST(LocalEnergy, HutchinsonProbesBelongToWalkersNotToChunksOrRanks) {
  const System s = load_molecule("lih", test::molecules_dir());
  FermiNet net(test::small_ferminet(), s);
  const auto r = test::random_positions(s, 10);
  auto whole = make(s, "hutchinson", 0);
  const auto all = whole(net, r).energy;
  for (int64_t chunk : {1, 3}) {
    const auto e = make(s, "hutchinson", chunk)(net, r).energy;
    EXPECT_LT(((e - all).abs().max() / all.abs().max()).item<double>(), 1e-11) << "chunk " << chunk;
  }
  auto second_rank = make(s, "hutchinson", 0);
  second_rank.set_first_walker(5);
  const auto tail = second_rank(net, r.slice(0, 5)).energy;
  EXPECT_LT(((tail - all.slice(0, 5)).abs().max() / all.abs().max()).item<double>(), 1e-11);
  const auto next = whole(net, r).energy;  // a new evaluation: new probes
  EXPECT_GT((next - all).abs().max().item<double>(), 1e-6);
}

// The local energy as a CUDA device captures it (r copied into a device buffer, terms written
// into buffers), run on the CPU in the emulated graph mode: the same energies as eager
// evaluations, for new positions each time and after an in-place parameter change. Stochastic
// (hutchinson) and jvp evaluations are never graphed (a replay would repeat the probes; jvp's
// forward-AD levels are process-wide).
TEST(LocalEnergy, GraphedEvaluationsGiveTheEagerEnergiesAndOnlyForCapturableMethods) {
  const System s = load_molecule("lih", test::molecules_dir());
  FermiNet net(test::small_ferminet(), s);
  std::vector<torch::Tensor> params;
  for (const auto& p : net.parameters()) params.push_back(p);
  parallel::GraphKey key = {&net};
  for (const auto& p : params) key.push_back(p.data_ptr());
  for (const auto* method : {"forward", "reverse", "jvp", "hutchinson"}) {
    auto eager = make(s, method, 4), graphed = make(s, method, 4);
    graphed.set_graph_mode(parallel::GraphMode::emulated);
    for (int call = 0; call < 4; ++call) {
      if (call == 3) {
        torch::NoGradGuard no_grad;
        params[0].mul_(1.01);  // in place: the key (storages) stays the same
      }
      const auto r = test::random_positions(s, 10, 20 + call);
      const auto a = eager(net, r, key), b = graphed(net, r, key);
      EXPECT_TRUE(torch::equal(a.energy, b.energy)) << method << " call " << call;
      EXPECT_TRUE(torch::equal(a.kinetic, b.kinetic)) << method << " call " << call;
      EXPECT_TRUE(torch::equal(a.potential, b.potential)) << method << " call " << call;
    }
    const bool capturable = std::string(method) == "forward" || std::string(method) == "reverse";
    EXPECT_EQ(graphed.graph() != nullptr, capturable) << method;
    if (capturable) {
      EXPECT_EQ(graphed.graph()->captures(), 1) << method;
      EXPECT_EQ(graphed.graph()->replays(), 3) << method;
    }
    torch::NoGradGuard no_grad;
    params[0].div_(1.01);
  }
}

namespace {
/// Peak working memory of one local-energy evaluation of all walkers, in bytes.
std::int64_t peak_of(LocalEnergy& le, WaveFunction& wf, const torch::Tensor& r, torch::Tensor* e = nullptr) {
  batching::PeakMemoryScope scope;
  const auto out = le(wf, r).energy;
  if (e) *e = out;
  return scope.peak_bytes();
}

LocalEnergy budgeted(const System& s, const std::string& method, std::int64_t bytes) {
  HamiltonianOptions o;
  o.laplacian = method;
  ChunkPolicy p;
  p.budget = batching::MemoryBudget(bytes);
  return LocalEnergy(s, make_laplacian(o, 0), torch::TensorOptions().dtype(torch::kFloat64), p);
}
}  // namespace

TEST(LocalEnergy, BudgetSizedChunksKeepPeakMemoryWithinTheBudget) {
  const System s = load_molecule("lih", test::molecules_dir());
  FermiNet net(test::small_ferminet(), s);
  const auto r = test::random_positions(s, 64);
  for (const auto* m : {"jvp", "reverse", "forward", "hutchinson"}) {
    auto whole = make(s, m, 0);
    torch::Tensor e_all, e;
    const std::int64_t unchunked = peak_of(whole, net, r, &e_all);
    const std::int64_t budget = unchunked / 4;
    auto le = budgeted(s, m, budget);
    const std::int64_t first = peak_of(le, net, r, &e);   // includes the calibration
    const std::int64_t second = peak_of(le, net, r);
    EXPECT_GT(le.chunk(), 0) << m;
    EXPECT_LT(le.chunk(), 64) << m << ": a quarter of the unchunked peak must force chunks";
    EXPECT_LE(first, budget) << m << " chunk " << le.chunk();
    EXPECT_LE(second, budget) << m << " chunk " << le.chunk();
    if (std::string(m) != "hutchinson") {  // fresh probes per call; exact methods must agree
      EXPECT_LT((e - e_all).abs().max().item<double>() / e_all.abs().max().item<double>(), 1e-11) << m;
    }
  }
}

// Graphed local energies (one per molecule, say) share the device's graph pool: each fits its
// share of the budget without subtracting what the pool already holds (its capture reuses it),
// and the pool is the largest warm-up peak, not their sum.
TEST(LocalEnergy, GraphedEvaluationsShareOnePoolAndEachFitsItsShareOfTheBudget) {
  const System s = load_molecule("lih", test::molecules_dir());
  FermiNet net(test::small_ferminet(), s);
  const auto r = test::random_positions(s, 64);
  auto whole = make(s, "forward", 0);
  const std::int64_t budget = peak_of(whole, net, r);  // half of it cannot take all walkers
  parallel::GraphKey key = {&net};
  for (const auto& p : net.parameters()) key.push_back(p.data_ptr());
  ASSERT_EQ(batching::held_bytes(-1), 0);
  {
    auto a = budgeted(s, "forward", budget), b = budgeted(s, "forward", budget);
    a.set_graph_mode(parallel::GraphMode::emulated);
    b.set_graph_mode(parallel::GraphMode::emulated);
    for (int call = 0; call < 2; ++call) (void)a(net, r, key);
    const std::int64_t after_a = batching::held_bytes(-1);
    for (int call = 0; call < 2; ++call) (void)b(net, r, key);
    EXPECT_LT(a.chunk(), 64);
    EXPECT_EQ(b.chunk(), a.chunk()) << "b must not plan around a's pool, which its capture reuses";
    EXPECT_GT(after_a, 0);
    EXPECT_LE(after_a, budget / 2);
    EXPECT_EQ(batching::held_bytes(-1), std::max(a.graph()->warmup_peak_bytes(), b.graph()->warmup_peak_bytes()));
  }
  EXPECT_EQ(batching::held_bytes(-1), 0);
}

TEST(LocalEnergy, CalibrationDoesNotConsumeHutchinsonProbes) {
  const System s = load_molecule("lih", test::molecules_dir());
  FermiNet net(test::small_ferminet(), s);
  const auto r = test::random_positions(s, 16);
  auto fixed = make(s, "hutchinson", 16);
  auto measured = budgeted(s, "hutchinson", std::int64_t{1} << 34);
  EXPECT_TRUE(torch::equal(fixed(net, r).energy, measured(net, r).energy));
}

TEST(LocalEnergy, BudgetTooSmallForOneWalkerIsAClearError) {
  const System s = load_molecule("lih", test::molecules_dir());
  FermiNet net(test::small_ferminet(), s);
  auto le = budgeted(s, "jvp", 4096);
  try {
    le(net, test::random_positions(s, 8));
    FAIL() << "expected BudgetError";
  } catch (const BudgetError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("run.memory_budget"), std::string::npos) << what;
    EXPECT_NE(what.find("one walker"), std::string::npos) << what;
  }
}

// An exactly singular orbital matrix is a node (ψ = 0), not an error: log|ψ| = −inf with sign 0
// from the forward pass, no exception from any Laplacian method, a non-finite local energy for
// that walker only (the trainer and the evaluation exclude and count it). The matrix is made
// singular by an electron so far out that its envelopes underflow to exactly zero (a zero row).
// (Two same-spin electrons at one point are a node too, but their rows are bitwise equal only
// where every vectorized ATen kernel rounds them alike; on AVX2/AVX-512 kernels they differ in
// the last bits and the determinant comes out as ~1e-22 instead of 0.)
TEST(LocalEnergy, ExactlySingularOrbitalMatricesGiveANonFiniteWalkerNotAnException) {
  const System s = load_molecule("lih", test::molecules_dir());  // 2 up, 2 down
  FermiNet net(test::small_ferminet(), s);
  auto r = test::random_positions(s, 5);
  r[3][0] += 1e4;  // walker 3: a spin-up electron 10^4 bohr out: exp(−σ r) = 0, a zero orbital row
  {
    torch::NoGradGuard ng;
    const auto out = net.forward(r, test::tensors(s));
    EXPECT_EQ(out.sign[3].item<double>(), 0.0);
    EXPECT_EQ(out.logabs[3].item<double>(), -std::numeric_limits<double>::infinity());
    const auto others = torch::tensor({0, 1, 2, 4});
    EXPECT_TRUE(torch::isfinite(out.logabs.index({others})).all().item<bool>());
  }
  const auto others = torch::tensor({0, 1, 2, 4});
  torch::Tensor reference;
  for (const auto* m : {"forward", "jvp", "reverse"}) {
    torch::Tensor e;
    ASSERT_NO_THROW(e = make(s, m)(net, r).energy) << m;
    EXPECT_FALSE(std::isfinite(e[3].item<double>())) << m;
    EXPECT_TRUE(torch::isfinite(e.index({others})).all().item<bool>()) << m;
    // The other walkers' energies do not depend on the singular one.
    if (!reference.defined()) reference = e.index({others});
    EXPECT_TRUE(torch::allclose(e.index({others}), reference, 1e-8, 1e-8)) << m;
  }
}
