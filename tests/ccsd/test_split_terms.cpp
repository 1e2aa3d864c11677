/// The real CCSD terms under every split strategy and tiny budgets equal the unsplit result.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "batching/budget.hpp"
#include "ccsd/dressed.hpp"
#include "ccsd/mo_integrals.hpp"
#include "ccsd/rccsd.hpp"
#include "ccsd/residual.hpp"
#include "common/ccsd_fixtures.hpp"
#include "core/errors.hpp"

namespace {

namespace b = nnvmc::batching;

/// Water/6-31G with Cholesky vectors; converged amplitudes plus noise, so that the
/// residual is far from zero (at convergence it is pure round-off).
struct Setup {
  nnvmc::System system = nnvmc::load_molecule("h2o", nnvmc::default_molecules_dir());
  nnvmc::scf::BasisSet basis = nnvmc::scf::make_basis("6-31g", system);
  nnvmc::scf::ScfResult rhf = nnvmc::scf::run_rhf(system, basis);
  nnvmc::ccsd::MoIntegrals mo = nnvmc::ccsd::cholesky_integrals(rhf, basis, 0, 1e-6);
  torch::Tensor t1, t2;
  Setup() {
    nnvmc::ccsd::CcsdOptions o;
    o.plan.cost = b::CostModel{};
    o.max_iterations = 200;
    const auto r = nnvmc::ccsd::run_rccsd(mo, o);
    torch::manual_seed(5);
    t1 = r.t1 + 0.01 * torch::randn_like(r.t1);
    const torch::Tensor noise = 0.01 * torch::randn_like(r.t2);
    t2 = r.t2 + noise + noise.permute({2, 3, 0, 1});
  }
};

Setup& setup() {
  static Setup s;
  return s;
}

using nnvmc::test::fixed_cost_plan;
using nnvmc::test::max_rel_error;

}  // namespace

TEST(SplitTerms, LadderUnderEverySplitAndTinyBudgetsEqualsUnsplit) {
  torch::set_num_threads(1);
  auto& s = setup();
  nnvmc::ccsd::Contractor ample(fixed_cost_plan(0, b::SplitStrategy::none));
  nnvmc::ccsd::DressedHamiltonian h0(s.mo, ample);
  h0.dress(s.t1);
  const torch::Tensor ref = h0.ladder(s.t2);
  const std::int64_t need = ample.stats().at("ladder").peak_bytes;
  ASSERT_GT(need, 0);
  for (auto split : {b::SplitStrategy::x, b::SplitStrategy::c, b::SplitStrategy::automatic})
    for (std::int64_t div : {2, 8, 32}) {
      SCOPED_TRACE(b::to_string(split) + " budget need/" + std::to_string(div));
      nnvmc::ccsd::Contractor c(fixed_cost_plan(need / div, split));
      nnvmc::ccsd::DressedHamiltonian h(s.mo, c);
      h.dress(s.t1);
      const torch::Tensor r = h.ladder(s.t2);
      EXPECT_LE(max_rel_error(r, ref), 1e-12);
      EXPECT_LE(c.stats().at("ladder").peak_bytes, need / div);
      EXPECT_GT(c.stats().at("ladder").batches, 1);
    }
}

TEST(SplitTerms, FullResidualUnderTinyBudgetsEqualsUnsplit) {
  torch::set_num_threads(1);
  auto& s = setup();
  nnvmc::ccsd::Contractor ample(fixed_cost_plan(0, b::SplitStrategy::none));
  nnvmc::ccsd::DressedHamiltonian h0(s.mo, ample);
  h0.dress(s.t1);
  const auto ref = nnvmc::ccsd::ccsd_residual(h0, ample, s.t1, s.t2);
  for (auto split : {b::SplitStrategy::x, b::SplitStrategy::c, b::SplitStrategy::automatic}) {
    SCOPED_TRACE(b::to_string(split));
    const std::int64_t budget = 64 * 1024;  // far below the ladder's and the dressing's need
    nnvmc::ccsd::Contractor c(fixed_cost_plan(budget, split));
    nnvmc::ccsd::DressedHamiltonian h(s.mo, c);
    h.dress(s.t1);
    const auto r = nnvmc::ccsd::ccsd_residual(h, c, s.t1, s.t2);
    EXPECT_LE(max_rel_error(r.r1, ref.r1), 1e-12);
    EXPECT_LE(max_rel_error(r.r2, ref.r2), 1e-12);
    for (const auto& [term, st] : c.stats()) EXPECT_LE(st.peak_bytes, budget) << term;
  }
}

TEST(SplitTerms, ImpossibleBudgetForTheLadderIsABudgetError) {
  auto& s = setup();
  nnvmc::ccsd::Contractor c(fixed_cost_plan(16, b::SplitStrategy::c));
  nnvmc::ccsd::DressedHamiltonian h(s.mo, c);
  EXPECT_THROW(h.dress(s.t1), nnvmc::BudgetError);
}

// Each term's statistics count its GEMM FLOPs and the bytes of its distinct operand elements
// and output (a broadcast operand once), the least traffic any implementation has, so
// flops / operand_bytes is its arithmetic intensity, the same under every split.
TEST(TermStats, OperandBytesCountEachDistinctElementOnceUnderEverySplit) {
  torch::manual_seed(2);
  const auto A = torch::randn({6, 5}, torch::kFloat64), B = torch::randn({5, 7, 4}, torch::kFloat64);
  const auto Ak = A.unsqueeze(0).expand({3, 6, 5});  // broadcast over k: 30 distinct elements
  for (const std::int64_t budget : {std::int64_t(0), std::int64_t(2000)}) {
    nnvmc::ccsd::Contractor c(fixed_cost_plan(budget, b::SplitStrategy::automatic));
    const auto out = c("t", "ij,jkl->ikl", {A, B});
    EXPECT_TRUE(torch::allclose(out, torch::einsum("ij,jkl->ikl", {A, B}), 1e-12, 1e-12));
    c("k", "kij,jl->kil", {Ak, B.select(1, 0)});
    const auto& t = c.stats().at("t");
    EXPECT_DOUBLE_EQ(t.flops, 2.0 * 6 * 5 * 7 * 4) << budget;
    EXPECT_DOUBLE_EQ(t.operand_bytes, 8.0 * (30 + 140 + 168)) << budget;
    EXPECT_DOUBLE_EQ(c.stats().at("k").operand_bytes, 8.0 * (30 + 20 + 72)) << budget;
  }
}

// --memory auto is a share of the memory free when the run starts, before the integrals exist:
// the iterations and (T) plan within a share of what is free once the integrals, blocks and
// amplitude buffers are held (measured again), not within the first figure; a given budget stays.
TEST(SplitTerms, AutoBudgetIsMeasuredAgainAfterTheIntegralsAndBeforeTriples) {
  auto& s = setup();
  const std::int64_t share = std::int64_t(64) << 20;  // what "auto" stands for (as a comparison's cell share)
  b::MemoryBudget::set_cpu_auto_bytes(share);
  struct Restore {
    ~Restore() { b::MemoryBudget::set_cpu_auto_bytes(0); }  // (also when the run throws)
  } restore;
  nnvmc::ccsd::CcsdOptions o;
  o.plan.cost = b::CostModel{};
  o.max_iterations = 200;
  o.triples = true;
  o.plan.budget_bytes = b::MemoryBudget::parse("auto", "cpu", "--memory").bytes();
  o.budget_is_auto = true;
  const auto measured = nnvmc::ccsd::run_rccsd(s.mo, o);
  const std::int64_t ov = s.mo.space.n_act_occ() * s.mo.space.n_vir();
  // the iterations' amplitudes, DIIS rows and intermediates were set aside: 60 % of 128 o²v² doubles at least
  EXPECT_LE(measured.budget_iterations, share - std::int64_t(0.6 * 128 * ov * ov));
  EXPECT_GT(measured.budget_iterations, 0);  // (how much the process grew since the share was set is not ours to fix)
  EXPECT_GT(measured.budget_triples, 0);
  EXPECT_LE(measured.budget_triples, share);
  o.budget_is_auto = false;  // a budget the user gave is kept
  o.plan.budget_bytes = share;
  const auto given = nnvmc::ccsd::run_rccsd(s.mo, o);
  EXPECT_EQ(given.budget_iterations, share);
  EXPECT_EQ(given.budget_triples, share);
  EXPECT_NEAR(measured.e_ccsd_t, given.e_ccsd_t, 1e-10);
}
