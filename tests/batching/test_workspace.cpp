/// The executor's workspace: exact-size reuse, never more held than in use at a creation,
/// and reuse across executions of one plan.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "batching/contract.hpp"
#include "batching/workspace.hpp"

namespace b = nnvmc::batching;

TEST(Workspace, ReusesAnIdleBufferOfTheSameSizeAndReleasesOthersBeforeGrowing) {
  b::Workspace ws;
  const auto f64 = torch::TensorOptions().dtype(torch::kFloat64);
  torch::Tensor x = ws.take({4, 8}, f64);
  const void* p = x.data_ptr();
  ws.give(x);
  torch::Tensor y = ws.take({8, 4}, f64);  // same bytes, other shape: the same buffer
  EXPECT_EQ(y.data_ptr(), p);
  EXPECT_EQ(y.sizes(), torch::IntArrayRef({8, 4}));
  EXPECT_EQ(ws.created(), 1);
  torch::Tensor f = ws.take({64}, torch::TensorOptions().dtype(torch::kFloat32));  // same bytes, other dtype
  EXPECT_EQ(ws.created(), 2);
  ws.give(y);
  ws.give(f);
  EXPECT_EQ(ws.idle_bytes(), 2 * 256);
  torch::Tensor z = ws.take({100}, f64);  // nothing idle fits, no limit: idle buffers go first
  EXPECT_EQ(ws.held_bytes(), 800);
  EXPECT_EQ(ws.idle_bytes(), 0);
  ws.give(z);
  ws.release();
  EXPECT_EQ(ws.held_bytes(), 0);
}

TEST(Workspace, KeepsIdleBuffersWhileTheyFitTheLimitAndDropsTheLeastRecentlyUsedFirst) {
  b::Workspace ws;
  const auto f64 = torch::TensorOptions().dtype(torch::kFloat64);
  torch::Tensor a = ws.take({10}, f64, 0, 1000), c = ws.take({20}, f64, 0, 1000);
  const void* pc = c.data_ptr();
  ws.give(a);  // a idle first (older), then c
  ws.give(c);
  torch::Tensor d = ws.take({30}, f64, 0, 1000);  // 240 + 80 + 160 fits 1000: both stay idle
  EXPECT_EQ(ws.held_bytes(), 480);
  torch::Tensor e = ws.take({70}, f64, 0, 1000);  // 480 + 560 > 1000: a (least recent) goes, c stays
  EXPECT_EQ(ws.held_bytes(), 960);
  EXPECT_EQ(ws.take({20}, f64, 0, 1000).data_ptr(), pc);
  EXPECT_EQ(ws.created(), 4);
}

TEST(Workspace, SecondExecutionOfAPlanMakesNoNewBuffersAndTheWorkspaceStaysWithinTheBudget) {
  torch::set_num_threads(1);
  torch::manual_seed(5);
  const auto L = torch::randn({20, 9, 9}, torch::kFloat64), t = torch::randn({3, 9, 3, 9}, torch::kFloat64);
  torch::Tensor out = torch::empty({3, 9, 3, 9}, torch::kFloat64);
  b::PlanOptions o;
  o.cost = b::CostModel{};
  o.cost->tile_bytes = 2048;  // tiles: all distinct buffers of a batch fit the budget (else they are remade rather than exceed it)
  o.cost->tile_min_width = 1;
  o.split = b::SplitStrategy::c;
  o.workspace = std::make_shared<b::Workspace>();
  const auto need = b::plan_contraction("xac,xbd,icjd->iajb", {L, L, t}, out, o).peak_bytes;
  o.budget_bytes = need / 4;
  const auto plan = b::plan_contraction("xac,xbd,icjd->iajb", {L, L, t}, out, o);
  ASSERT_GT(plan.batches, 1) << plan.explain();
  b::execute(plan, {L, L, t}, out, o);
  const auto made = o.workspace->created();
  EXPECT_LE(o.workspace->held_bytes(), o.budget_bytes);
  const auto rep = b::execute(plan, {L, L, t}, out, o);
  EXPECT_EQ(o.workspace->created(), made);
  EXPECT_LE(o.workspace->held_bytes(), o.budget_bytes);
  // another contraction in between (as the terms of a CCSD iteration) holds no more than the budget
  torch::Tensor other = torch::empty({3, 3, 9, 9}, torch::kFloat64);
  b::execute(b::plan_contraction("icjd,xab->ijab", {t, L}, other, o), {t, L}, other, o);
  EXPECT_LE(o.workspace->held_bytes(), o.budget_bytes);
  EXPECT_EQ(rep.peak_bytes, plan.peak_bytes);
  EXPECT_LE((out - torch::einsum("xac,xbd,icjd->iajb", {L, L, t})).abs().max().item<double>(), 1e-12);
}
