#include <gtest/gtest.h>

#include "batching/plan.hpp"
#include "core/errors.hpp"

namespace b = nnvmc::batching;

namespace {
b::PlanOptions fixed(std::int64_t budget, b::SplitStrategy s) {
  b::PlanOptions o;
  o.budget_bytes = budget;
  o.split = s;
  o.cost = b::CostModel{};  // deterministic rates
  return o;
}
}  // namespace

TEST(Einsum, RejectsMalformedSpecs) {
  EXPECT_THROW(b::parse_einsum("ab,bc"), nnvmc::InputError);
  EXPECT_THROW(b::parse_einsum("aa->a"), nnvmc::InputError);
  EXPECT_THROW(b::parse_einsum("ab,bc->ad"), nnvmc::InputError);
  const auto s = b::parse_einsum("xac, xbd ,icjd->iajb");
  ASSERT_EQ(s.inputs.size(), 3u);
  EXPECT_EQ(s.inputs[1], "xbd");
  EXPECT_EQ(s.output, "iajb");
}

TEST(Einsum, MismatchedExtentsAreInputErrors) {
  const auto s = b::parse_einsum("ab,bc->ac");
  EXPECT_THROW(b::label_extents(s, {{2, 3}, {4, 5}}), nnvmc::InputError);
  EXPECT_THROW(b::label_extents(s, {{2, 3}}), nnvmc::InputError);
}

TEST(Planner, ChainOrderMinimisesFlops) {
  // (A·B)·C costs 2·(10·100·10 + 10·10·1000) = 2.2e5; A·(B·C) costs 2·(100·10·1000 + 10·100·1000).
  const auto s = b::parse_einsum("ab,bc,cd->ad");
  const auto p = b::make_plan(s, {{10, 100}, {100, 10}, {10, 1000}}, fixed(0, b::SplitStrategy::automatic));
  ASSERT_EQ(p.steps.size(), 2u);
  EXPECT_DOUBLE_EQ(p.flops, 2.0 * (10 * 100 * 10 + 10 * 10 * 1000));
  EXPECT_EQ(p.batches, 1);
}

TEST(Planner, UnsplitGemmNeedsNoCopiesWhenLayoutsMatch) {
  const auto s = b::parse_einsum("ijab,abcd->ijcd");
  const auto p = b::make_plan(s, {{3, 3, 5, 5}, {5, 5, 5, 5}}, fixed(0, b::SplitStrategy::automatic));
  ASSERT_EQ(p.steps.size(), 1u);
  EXPECT_FALSE(p.steps[0].a.transpose_copy);
  EXPECT_FALSE(p.steps[0].b.transpose_copy);
  EXPECT_TRUE(p.out_direct);
  EXPECT_EQ(p.peak_bytes, 0);
}

TEST(Planner, CSplitOfTheLadderNeverSplitsTheCholeskyAxis) {
  const auto s = b::parse_einsum("xac,xbd,icjd->iajb");
  const std::vector<std::vector<std::int64_t>> sh{{40, 12, 12}, {40, 12, 12}, {3, 12, 3, 12}};
  const auto ample = b::make_plan(s, sh, fixed(0, b::SplitStrategy::c));
  for (std::int64_t div : {2, 8, 32}) {
    const auto p = b::make_plan(s, sh, fixed(ample.peak_bytes / div, b::SplitStrategy::c));
    EXPECT_EQ(p.blocks.count('x'), 0u) << p.explain();
    EXPECT_LE(p.peak_bytes, ample.peak_bytes / div);
    EXPECT_GT(p.batches, 1);
  }
}

TEST(Planner, AutoIsNoCostlierThanXOrC) {
  const auto s = b::parse_einsum("xac,xbd,icjd->iajb");
  const std::vector<std::vector<std::int64_t>> sh{{40, 12, 12}, {40, 12, 12}, {3, 12, 3, 12}};
  const auto ample = b::make_plan(s, sh, fixed(0, b::SplitStrategy::automatic));
  const std::int64_t budget = ample.peak_bytes / 8;
  const auto pa = b::make_plan(s, sh, fixed(budget, b::SplitStrategy::automatic));
  const auto px = b::make_plan(s, sh, fixed(budget, b::SplitStrategy::x));
  const auto pc = b::make_plan(s, sh, fixed(budget, b::SplitStrategy::c));
  EXPECT_LE(pa.modelled_seconds, px.modelled_seconds);
  EXPECT_LE(pa.modelled_seconds, pc.modelled_seconds);
  EXPECT_NE(pa.explain().find("step 1"), std::string::npos);
}

TEST(Planner, ImpossibleBudgetIsABudgetErrorNamingTheContraction) {
  const auto s = b::parse_einsum("xac,xbd,icjd->iajb");
  for (auto strategy : {b::SplitStrategy::x, b::SplitStrategy::c, b::SplitStrategy::automatic,
                        b::SplitStrategy::none}) {
    try {
      b::make_plan(s, {{40, 12, 12}, {40, 12, 12}, {3, 12, 3, 12}}, fixed(4, strategy));
      FAIL() << "expected BudgetError";
    } catch (const nnvmc::BudgetError& e) {
      EXPECT_NE(std::string(e.what()).find("xac,xbd,icjd->iajb"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("memory budget"), std::string::npos) << e.what();
    }
  }
}
