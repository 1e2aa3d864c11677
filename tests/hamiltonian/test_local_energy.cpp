#include <gtest/gtest.h>

#include "common/test_util.hpp"
#include "hamiltonian/local_energy.hpp"
#include "hamiltonian/potential.hpp"
#include "models/analytic/hydrogenic.hpp"
#include "models/ferminet/ferminet.hpp"

using namespace nnvmc;

namespace {
LocalEnergy make(const System& s, const std::string& method, int64_t chunk = 0) {
  HamiltonianOptions o;
  o.laplacian = method;
  return LocalEnergy(s, make_laplacian(o, 0), torch::TensorOptions().dtype(torch::kFloat64), chunk);
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
  auto nt = nuclei_tensors(h2, torch::TensorOptions().dtype(torch::kFloat64));
  const double v = potential_energy(r, nt.positions, nt.charges, h2.nuclear_repulsion()).item<double>();
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
