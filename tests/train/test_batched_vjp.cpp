/// batched_vjp: c vector–Jacobian products in one backward equal c separate backwards, through
/// the ops a hypernetwork uses (tanh, max over an axis, index_select, softplus, sigmoid), with
/// several and repeated outputs, unused inputs and scalar outputs; bad shapes are errors.
#include <gtest/gtest.h>

#include "core/errors.hpp"
#include "train/batched_vjp.hpp"

using namespace nnvmc;

namespace {
struct Graph {
  torch::Tensor w, e, unused, a, b;  // inputs; outputs a [7, 16], b [16]
};

Graph make_graph() {
  torch::manual_seed(5);
  const auto o = torch::TensorOptions().dtype(torch::kFloat64);
  Graph g;
  g.w = torch::randn({16, 8}, o).requires_grad_(true);
  g.e = torch::randn({5, 16}, o).requires_grad_(true);
  g.unused = torch::randn({3}, o).requires_grad_(true);
  const auto x = torch::randn({7, 8}, o);
  const auto idx = torch::tensor({0, 2, 4, 1, 3, 0, 2}, torch::kLong);
  const auto h = torch::tanh(torch::matmul(x, g.w.t()) + g.e.index_select(0, idx));  // [7, 16]
  const auto m = std::get<0>(h.max(1, true));
  g.a = torch::softplus(h - m) * torch::sigmoid(h);  // [7, 16]
  g.b = g.e.sum(0).square();                         // [16]
  return g;
}
}  // namespace

TEST(BatchedVjp, EachCotangentRowEqualsItsOwnBackwardPass) {
  const auto g = make_graph();
  torch::manual_seed(6);
  const int64_t c = 9;
  const auto va = torch::randn({c, 7, 16}, torch::kFloat64), vb = torch::randn({c, 16}, torch::kFloat64);
  // b twice: its cotangents add.
  const auto out = batched_vjp({g.a, g.b, g.b}, {g.w, g.e, g.unused}, {va, vb, 2 * vb}, /*retain_graph=*/true);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_FALSE(out[2].defined());
  EXPECT_EQ(out[0].sizes(), (std::vector<int64_t>{c, 16, 8}));
  EXPECT_EQ(out[1].sizes(), (std::vector<int64_t>{c, 5, 16}));
  for (int64_t i = 0; i < c; ++i) {
    const auto one = torch::autograd::grad({g.a, g.b}, {g.w, g.e}, {va[i], 3 * vb[i]}, /*retain_graph=*/true);
    EXPECT_TRUE(torch::allclose(out[0][i], one[0], 1e-13, 1e-14)) << i;
    EXPECT_TRUE(torch::allclose(out[1][i], one[1], 1e-13, 1e-14)) << i;
  }
}

TEST(BatchedVjp, AScalarOutputTakesOneNumberPerCotangent) {
  const auto y = torch::randn({4}, torch::kFloat64).requires_grad_(true);
  const auto v = torch::tensor({1.0, 2.0, -1.0}, torch::kFloat64);  // [c]
  const auto out = batched_vjp({y.sum()}, {y}, {v}, false);
  ASSERT_TRUE(out[0].defined());
  EXPECT_TRUE(torch::equal(out[0], v.unsqueeze(1).expand({3, 4})));
}

TEST(BatchedVjp, MismatchedCotangentsAreAnErrorNotACrash) {
  const auto g = make_graph();
  EXPECT_THROW(batched_vjp({g.a}, {g.w}, {torch::zeros({2, 7, 15}, torch::kFloat64)}, true), Error);
  EXPECT_THROW(batched_vjp({g.a, g.b}, {g.w}, {torch::zeros({2, 7, 16}, torch::kFloat64), torch::zeros({3, 16}, torch::kFloat64)}, true),
               Error);
  EXPECT_THROW(batched_vjp({g.a}, {g.w}, {}, true), Error);
}
