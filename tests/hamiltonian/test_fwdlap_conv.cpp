/// The ops of SchNet-like ansätze (pair_conv, softplus, constant_electrons, sum_feature_axis)
/// through a small test ansatz written once over Blocks<T>: the forward Laplacian against jvp,
/// reverse and finite differences, with local and dense features, masks and electron blocks.
#include <gtest/gtest.h>

#include "blocks/tensor_blocks.hpp"
#include "laplacian_checks.hpp"

using namespace nnvmc;
using test::expect_close;
using test::kinetic;

namespace {

/// log|ψ| = Σ_i Σ_f [ softplus-filtered convolutions of local and dense features over all
/// pairs, over a masked (j ≠ i) block and over an off-diagonal block, plus a sum over two
/// centres with constant weights ] — every path of pair_conv.
class ConvToy : public WaveFunction {
 public:
  ConvToy() {
    torch::manual_seed(41);
    w_ = register_module("w", torch::nn::Linear(1, 4));
    a_ = register_module("a", torch::nn::Linear(3, 4));
    b_ = register_module("b", torch::nn::Linear(4, 4));
    c_ = register_module("c", torch::nn::Linear(3, 4));
    to(torch::kFloat64);
    y_ = torch::randn({2, 4}, torch::kFloat64);
    x0_ = torch::randn({4, 4}, torch::kFloat64);
    centres_ = torch::tensor({{0.2, -0.1, 0.3}, {-0.4, 0.5, 0.1}}, torch::kFloat64);
  }
  template <class T>
  typename Blocks<T>::Signed log_psi(const T& r) {
    using Op = Blocks<T>;
    const auto opts = y_.options();
    const auto d = Op::pair_norm(Op::pair_vectors(r));                                        // [B, 4, 4, 1]
    const auto w = Op::softplus(Op::linear(w_, d));                                           // [B, 4, 4, 4] pair
    const auto x0 = Op::constant_electrons(r, x0_);                                           // [B, 4, 4] local, constant
    const auto v = Op::reshape_features(Op::sub_centres(r, centres_.narrow(0, 0, 1)), 1, {3});  // [B, 4, 3]
    const auto h = Op::add(Op::tanh(Op::linear(a_, v)), x0);                                  // local
    const auto mask = 1 - torch::eye(4, opts);
    const auto c1 = Op::pair_conv(w, h, mask);                                                // dense
    const auto h2 = Op::tanh(Op::linear(b_, c1));                                             // dense
    const auto c2 = Op::pair_conv(w, h2, torch::Tensor());                                    // dense h
    const auto blk = Op::slice_electrons(Op::slice_electrons(w, 1, 0, 2), 2, 2, 4);           // [B, 2, 2, 4]
    const auto c3 = Op::pair_conv(blk, Op::slice_electrons(h2, 1, 2, 4), torch::Tensor());  // electrons 0, 1
    const auto c4 = Op::pair_conv(blk, Op::slice_electrons(h, 1, 2, 4), torch::Tensor());   // local h block
    const auto en = Op::sum_feature_axis(
        Op::mul_const(Op::softplus(Op::linear(c_, Op::sub_centres(r, centres_))), y_), -2);  // [B, 4, 4] local
    auto total = Op::sum_electrons(Op::add(Op::add(c2, en), Op::square(c1)), 1);        // [B, 4]
    total = Op::add(total, Op::sum_electrons(Op::mul(c3, c4), 1));
    const auto l = Op::reshape_features(Op::sum_features(total), 0, {1});  // [B, 1]
    return Op::signed_logsumexp(torch::ones({batch(r), 1}, opts), Op::mul_const(l, torch::full({1}, 0.1, opts)));
  }
  LogPsi forward(const torch::Tensor& r, const SystemTensors&) override { return log_psi<torch::Tensor>(r); }
  SignedFwdLap forward_laplacian(const FwdLap& r, const SystemTensors&) override { return log_psi<FwdLap>(r); }
  std::string type() const override { return "test_conv_toy"; }

 private:
  static int64_t batch(const torch::Tensor& r) { return r.size(0); }
  static int64_t batch(const FwdLap& r) { return r.value.size(0); }
  torch::nn::Linear w_{nullptr}, a_{nullptr}, b_{nullptr}, c_{nullptr};
  torch::Tensor y_, x0_, centres_;
};

}  // namespace

TEST(FwdLapConv, PairConvolutionsAgreeWithJvpReverseAndFiniteDifferences) {
  ConvToy wf;
  torch::manual_seed(42);
  const auto r = torch::randn({5, 4, 3}, torch::kFloat64);
  const auto f = kinetic("forward", wf, r), j = kinetic("jvp", wf, r), b = kinetic("reverse", wf, r);
  expect_close(f.laplacian, j.laplacian, 1e-10, 0, "laplacian vs jvp");
  expect_close(f.grad_sq, j.grad_sq, 1e-10, 0, "grad_sq vs jvp");
  expect_close(f.laplacian, b.laplacian, 1e-10, 0, "laplacian vs reverse");
  expect_close(f.grad_sq, b.grad_sq, 1e-10, 0, "grad_sq vs reverse");
  test::expect_matches_finite_differences(f, wf, SystemTensors{}, r, 1e-3);
}

TEST(FwdLapConv, PairConvolutionOutputIsDenseAndHasTheTensorValue) {
  using Op = Blocks<FwdLap>;
  torch::NoGradGuard ng;
  torch::manual_seed(43);
  const auto r = torch::randn({3, 5, 3}, torch::kFloat64);
  const auto w_t = Blocks<torch::Tensor>::square(Blocks<torch::Tensor>::pair_norm(Blocks<torch::Tensor>::pair_vectors(r)));
  const auto rf = Op::positions(r);
  const auto w = Op::square(Op::pair_norm(Op::pair_vectors(rf)));
  const auto h = Op::sub_centres(rf, torch::zeros({1, 3}, torch::kFloat64));
  const auto hv = Op::reshape_features(h, 1, {3});
  const auto wide = Op::cat({w, w, w});  // [B, N, N, 3]
  const auto out = Op::pair_conv(wide, hv, torch::Tensor());
  EXPECT_EQ(out.kind, Sparsity::dense);
  const auto ref = Blocks<torch::Tensor>::pair_conv(torch::cat({w_t, w_t, w_t}, -1), r, torch::Tensor());
  EXPECT_TRUE(torch::allclose(out.value, ref, 1e-14, 1e-14));
}
