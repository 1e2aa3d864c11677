/// Every split strategy, under budgets from ample down to the smallest feasible batch,
/// gives the unsplit (torch::einsum) result and stays within its budget.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "batching/contract.hpp"
#include "batching/cuda_runtime.hpp"
#include "core/errors.hpp"

namespace b = nnvmc::batching;

namespace {

struct EinsumCase {
  std::string spec;
  std::vector<std::vector<std::int64_t>> shapes;
  bool down_to_smallest = true;  ///< also run at the smallest feasible budget (many batches)
};

std::vector<EinsumCase> cases() {
  return {
      {"ik,kj->ij", {{17, 23}, {23, 11}}},
      {"bik,bkj->bij", {{4, 7, 9}, {4, 9, 5}}},
      {"xac,xbd,icjd->iajb", {{6, 4, 4}, {6, 4, 4}, {2, 4, 2, 4}}},  // Cholesky ladder
      {"xac,xbd,icjd->iajb", {{30, 9, 9}, {30, 9, 9}, {3, 9, 3, 9}}, false},
      {"ijab,abcd->ijcd", {{3, 4, 6, 6}, {6, 6, 7, 5}}},
      {"kica,kjcb->iajb", {{2, 3, 4, 5}, {2, 3, 4, 5}}},  // transposed layouts
      {"abc,cd->a", {{5, 6, 7}, {7, 4}}},                // summed-out label
      {"ai,bj,ijkl,kc->abcl", {{4, 3}, {5, 2}, {3, 2, 4, 2}, {4, 3}}},
      {"xij,xkl->ikjl", {{10, 3, 4}, {10, 4, 3}}},
      {"ij,kjlz->ikl", {{6, 64}, {4, 64, 4, 2}}, false},  // an operand summed, then copied: hoisted under i splits
  };
}

/// Deterministic rates; `tile_bytes` > 0 makes every layout copy above it go in tiles.
b::PlanOptions options(std::int64_t budget, b::SplitStrategy s, double tile_bytes = 0) {
  b::PlanOptions o;
  o.budget_bytes = budget;
  o.split = s;
  o.cost = b::CostModel{};
  o.cost->tile_bytes = tile_bytes;
  o.cost->tile_min_width = 1;  // these tensors are tiny
  return o;
}

std::vector<torch::Tensor> random_operands(const EinsumCase& c, std::uint64_t seed) {
  torch::manual_seed(seed);
  std::vector<torch::Tensor> ops;
  for (const auto& sh : c.shapes) ops.push_back(torch::randn(sh, torch::kFloat64));
  return ops;
}

double rel_error(const torch::Tensor& x, const torch::Tensor& ref) {
  return (x - ref).abs().max().item<double>() / ref.abs().max().item<double>();
}

/// Smallest batch any strategy can reach: every splittable label at block 1.
std::int64_t smallest_batch(const EinsumCase& c, const std::vector<torch::Tensor>& ops, const torch::Tensor& out,
                            b::SplitStrategy s) {
  auto plan = b::plan_contraction(c.spec, ops, out, options(0, s));
  std::int64_t lo = 1, hi = std::max<std::int64_t>(plan.peak_bytes, 1);
  // binary search for the least budget that still plans
  while (lo < hi) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    try {
      b::plan_contraction(c.spec, ops, out, options(mid, s));
      hi = mid;
    } catch (const nnvmc::BudgetError&) {
      lo = mid + 1;
    }
  }
  return lo;
}

/// Thousands of tiny batches: one intra-op thread avoids OpenMP barrier costs on a busy machine.
class SplitEquivalence : public ::testing::Test {
 protected:
  void SetUp() override { torch::set_num_threads(1); }
};

}  // namespace

/// Runs every case under every strategy and budget with layout-copy tiles of `tile_bytes`
/// (0: none); counts the plans that used tiles, hoisted copies and strided operand views.
struct Seen {
  int tiled = 0, hoisted = 0, strided = 0;
};
Seen check_every_strategy_and_budget(double tile_bytes) {
  Seen seen;
  std::uint64_t seed = 1;
  for (const auto& c : cases()) {
    const auto ops = random_operands(c, seed++);
    const torch::Tensor ref = torch::einsum(c.spec, ops);
    const torch::Tensor out = torch::empty_like(ref);
    const std::int64_t need =
        b::plan_contraction(c.spec, ops, out, options(0, b::SplitStrategy::none, tile_bytes)).peak_bytes;
    for (auto s : {b::SplitStrategy::x, b::SplitStrategy::c, b::SplitStrategy::automatic}) {
      const std::int64_t tiny = smallest_batch(c, ops, out, s);  // without tiles (never lower with them)
      std::vector<std::int64_t> budgets{0, need, need / 2, need / 8, need / 32};
      if (c.down_to_smallest) budgets.push_back(tiny);
      for (std::int64_t budget : budgets) {
        if (budget != 0 && budget < tiny) continue;  // below the smallest batch: see ImpossibleBudget
        SCOPED_TRACE(c.spec + " split=" + b::to_string(s) + " budget=" + std::to_string(budget) +
                     " tile_bytes=" + std::to_string(tile_bytes));
        const auto plan = b::plan_contraction(c.spec, ops, out, options(budget, s, tile_bytes));
        for (const auto& st : plan.steps) {
          seen.tiled += st.tile_side >= 0;
          seen.hoisted += st.a.hoisted + st.b.hoisted;
          seen.strided += st.a.strided + st.b.strided;
        }
        out.fill_(std::nan(""));
        const auto rep = b::execute(plan, ops, out, options(budget, s, tile_bytes));
        EXPECT_LE(rel_error(out, ref), 1e-12) << plan.explain();
        if (budget > 0) {
          EXPECT_LE(rep.peak_bytes, budget) << plan.explain();
        }
        EXPECT_EQ(rep.peak_bytes, plan.peak_bytes) << plan.explain();
        EXPECT_EQ(rep.batches, plan.batches);
        EXPECT_DOUBLE_EQ(rep.flops, plan.flops);
      }
    }
  }
  return seen;
}

TEST_F(SplitEquivalence, EveryStrategyMatchesEinsumFromAmpleToTinyBudgets) {
  const Seen seen = check_every_strategy_and_budget(0);
  EXPECT_EQ(seen.tiled, 0);
  EXPECT_GT(seen.hoisted, 0);  // operands no split touches are copied once
  EXPECT_GT(seen.strided, 0);  // sliced operands used in place
}

TEST_F(SplitEquivalence, TiledLayoutCopiesMatchEinsumAndKeepTheAccountedPeak) {
  // 256-byte tiles: every layout copy of more than 32 doubles goes a few rows at a time
  const Seen seen = check_every_strategy_and_budget(256);
  EXPECT_GT(seen.tiled, 20);
}

TEST_F(SplitEquivalence, TinyBudgetsReallySplit) {
  const EinsumCase c{"xac,xbd,icjd->iajb", {{30, 9, 9}, {30, 9, 9}, {3, 9, 3, 9}}};
  const auto ops = random_operands(c, 7);  // planned only
  const torch::Tensor out = torch::empty({3, 9, 3, 9}, torch::kFloat64);
  for (auto s : {b::SplitStrategy::x, b::SplitStrategy::c}) {
    const auto plan = b::plan_contraction(c.spec, ops, out, options(smallest_batch(c, ops, out, s), s));
    EXPECT_GT(plan.batches, 10) << plan.explain();
  }
}

TEST_F(SplitEquivalence, ImpossibleBudgetThrowsBudgetError) {
  const EinsumCase c{"xac,xbd,icjd->iajb", {{30, 9, 9}, {30, 9, 9}, {3, 9, 3, 9}}};
  const auto ops = random_operands(c, 3);
  const torch::Tensor out = torch::empty({3, 9, 3, 9}, torch::kFloat64);
  for (auto s : {b::SplitStrategy::x, b::SplitStrategy::c, b::SplitStrategy::automatic}) {
    const std::int64_t tiny = smallest_batch(c, ops, out, s);
    EXPECT_THROW(b::contract(c.spec, ops, out, options(tiny - 1, s)), nnvmc::BudgetError);
  }
}

TEST_F(SplitEquivalence, AllocatingFrontEndAndFloat32Work) {
  torch::manual_seed(11);
  const auto a = torch::randn({6, 5}, torch::kFloat32), bb = torch::randn({5, 4}, torch::kFloat32);
  b::ExecReport rep;
  const auto r = b::contract("ik,kj->ij", {a, bb}, options(0, b::SplitStrategy::automatic), &rep);
  EXPECT_LE(rel_error(r, torch::matmul(a, bb)), 1e-6);
  EXPECT_DOUBLE_EQ(rep.flops, 2.0 * 6 * 5 * 4);
  EXPECT_EQ(rep.batches, 1);
}

TEST_F(SplitEquivalence, CublasBackendNeedsACudaBuild) {
  const auto a = torch::randn({3, 4}, torch::kFloat64), bb = torch::randn({4, 2}, torch::kFloat64);
  auto o = options(0, b::SplitStrategy::automatic);
  o.backend = b::BackendKind::cublas;
  if (!nnvmc::batching::built_with_cuda()) {
    EXPECT_THROW(b::contract("ik,kj->ij", {a, bb}, o), nnvmc::InputError);
  } else {
    EXPECT_EQ(b::parse_backend("cublas"), b::BackendKind::cublas);  // runs only with a GPU
  }
}
