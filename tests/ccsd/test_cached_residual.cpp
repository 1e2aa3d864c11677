/// The cached-integral CCSD residual (bare blocks + packed (ab)± ladder) equals the residual of
/// integrals dressed every iteration, for conventional and Cholesky integrals, with and without
/// a frozen core, and under tiny budgets.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "ccsd/dressed.hpp"
#include "ccsd/mo_integrals.hpp"
#include "ccsd/packed_ladder.hpp"
#include "ccsd/rccsd.hpp"
#include "ccsd/residual.hpp"
#include "common/ccsd_fixtures.hpp"

namespace {

namespace b = nnvmc::batching;
namespace cc = nnvmc::ccsd;

using nnvmc::test::water;
using nnvmc::test::fixed_cost_plan;
using nnvmc::test::max_rel_error;

/// Random amplitudes of CCSD size and symmetry (t_ij^ab = t_ji^ba), far from converged.
std::pair<torch::Tensor, torch::Tensor> amplitudes(const cc::MoIntegrals& mo) {
  const std::int64_t o = mo.space.n_act_occ(), v = mo.space.n_vir();
  torch::manual_seed(11);
  const torch::Tensor t1 = 0.1 * torch::randn({o, v}, torch::kFloat64);
  const torch::Tensor x = 0.05 * torch::randn({o, v, o, v}, torch::kFloat64);
  return {t1, x + x.permute({2, 3, 0, 1})};
}

void expect_cached_equals_dressed(const cc::MoIntegrals& mo, std::int64_t budget = 0) {
  const auto [t1, t2] = amplitudes(mo);
  cc::Contractor dressed_c(fixed_cost_plan());
  cc::DressedHamiltonian h(mo, dressed_c);
  h.dress(t1);
  const auto ref = cc::ccsd_residual(h, dressed_c, t1, t2);
  for (auto split : {b::SplitStrategy::automatic, b::SplitStrategy::x, b::SplitStrategy::c}) {
    SCOPED_TRACE(b::to_string(split) + " budget " + std::to_string(budget));
    cc::Contractor c(fixed_cost_plan(budget, split));
    const cc::CachedIntegrals ci(mo, c);
    const auto r = cc::ccsd_residual(ci, c, t1, t2);
    EXPECT_LE(max_rel_error(r.r1, ref.r1), 1e-12);
    EXPECT_LE(max_rel_error(r.r2, ref.r2), 1e-12);
    if (budget > 0) {
      for (const auto& [term, st] : c.stats()) EXPECT_LE(st.peak_bytes, budget) << term;
    }
    if (budget == 0) break;  // one unlimited run is enough
  }
}

}  // namespace

TEST(CachedResidual, ConventionalEqualsDressedEveryIteration) {
  expect_cached_equals_dressed(cc::conventional_integrals(water().rhf, water().basis, 0));
}

TEST(CachedResidual, FrozenCoreConventionalEqualsDressedEveryIteration) {
  expect_cached_equals_dressed(cc::conventional_integrals(water().rhf, water().basis, 1));
}

TEST(CachedResidual, CholeskyEqualsDressedEveryIteration) {
  expect_cached_equals_dressed(cc::cholesky_integrals(water().rhf, water().basis, 0, 1e-4));
}

TEST(CachedResidual, FrozenCoreCholeskyUnderTinyBudgetsEqualsDressedEveryIteration) {
  expect_cached_equals_dressed(cc::cholesky_integrals(water().rhf, water().basis, 1, 1e-4), 64 * 1024);
}

TEST(CachedResidual, PackedLadderEqualsTheUnpackedDressedLadder) {
  const auto mo = cc::conventional_integrals(water().rhf, water().basis, 0);
  const auto [t1, t2] = amplitudes(mo);
  cc::Contractor c(fixed_cost_plan());
  cc::DressedHamiltonian h(mo, c);
  h.dress(t1);
  const torch::Tensor ref = h.ladder(t2);  // Σ_cd ĝ_acbd t_icjd on the dressed vvvv block
  const cc::BareBlocks blocks = cc::bare_blocks(mo, c);
  const cc::PackedLadder ladder(mo, blocks, c);
  const torch::Tensor w = torch::einsum("icjd,kcld->kilj", {t2, blocks.ovov});
  EXPECT_LE(max_rel_error(ladder.apply(t2, t1, w), ref), 1e-12);
}

// Dressing every iteration saves memory only with Cholesky vectors: conventional runs hold the
// MO ERIs, which are larger than the cached blocks, and dressing them makes whole v⁴ blocks.
TEST(CachedResidual, ABudgetBelowTwiceTheBlocksDressesCholeskyVectorsButKeepsConventionalBlocks) {
  const auto conv = cc::conventional_integrals(water().rhf, water().basis, 0);
  const auto chol = cc::cholesky_integrals(water().rhf, water().basis, 0, 1e-5);
  const std::int64_t o = conv.space.n_act_occ(), v = conv.space.n_vir();
  ASSERT_GT(conv.bytes(), cc::CachedIntegrals::bytes(o, v));  // what the rule relies on
  cc::CcsdOptions opt;
  opt.plan = fixed_cost_plan(cc::CachedIntegrals::bytes(o, v));  // less than twice the blocks
  const auto conv_run = cc::run_rccsd(conv, opt);
  const auto chol_run = cc::run_rccsd(chol, opt);
  EXPECT_TRUE(conv_run.cached_integrals);
  EXPECT_FALSE(chol_run.cached_integrals);
  opt.plan = fixed_cost_plan(2 * cc::CachedIntegrals::bytes(o, v));
  EXPECT_TRUE(cc::run_rccsd(chol, opt).cached_integrals);
  opt.plan = fixed_cost_plan();
  EXPECT_NEAR(conv_run.e_ccsd, cc::run_rccsd(conv, opt).e_ccsd, 1e-10);
}

TEST(CachedResidual, IterationsReachTheSameEnergyBothWays) {
  const auto mo = cc::cholesky_integrals(water().rhf, water().basis, 0, 1e-5);
  cc::CcsdOptions o;
  o.plan.cost = b::CostModel{};
  const auto cached = cc::run_rccsd(mo, o);
  o.cache_integrals = false;
  const auto dressed = cc::run_rccsd(mo, o);
  EXPECT_TRUE(cached.cached_integrals);
  EXPECT_FALSE(dressed.cached_integrals);
  EXPECT_NEAR(cached.e_ccsd, dressed.e_ccsd, 1e-10);
  EXPECT_EQ(cached.iterations, dressed.iterations);
}
