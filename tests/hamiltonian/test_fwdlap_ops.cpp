/// FwdLap ops that FermiNet does not use (log, exp, square, products of equal layouts, global
/// sums) checked through a small test ansatz written once over Blocks<T>, and the in-place
/// fast paths checked not to touch values that are shared.
#include <gtest/gtest.h>

#include "laplacian_checks.hpp"
#include "blocks/tensor_blocks.hpp"

using namespace nnvmc;
using test::expect_close;
using test::kinetic;

namespace {

/// log|ψ| = Σ_i Σ_f tanh(W·[r_i − c, |r_i − c|])_f · log(1 + |r_i − c|²)
///        + Σ_ij exp(−|r_i − r_j|²)·|r_i − r_j|
class MixedOps : public WaveFunction {
 public:
  MixedOps() {
    torch::manual_seed(21);
    lin_ = register_module("lin", torch::nn::Linear(4, 5));
    lin_->to(torch::kFloat64);
    centre_ = register_buffer("centre", torch::tensor({{0.2, -0.1, 0.3}}, torch::kFloat64));
  }
  template <class T>
  typename Blocks<T>::Signed log_psi(const T& r) {
    using Op = Blocks<T>;
    const auto v = Op::reshape_features(Op::sub_centres(r, centre_), 1, {3});  // [B, N, 3]
    const auto d = Op::norm(v);                                                // [B, N, 1]
    const auto h = Op::tanh(Op::linear(lin_, Op::cat({v, d})));                // [B, N, 5]
    const auto g = Op::log(Op::add(Op::square(d), Op::exp(Op::mul_const(d, torch::zeros({1}, d_opts(r))))));
    const auto one = Op::sum_features(Op::mul(h, g));                          // [B, N] · [B, N, 1]
    const auto ee = Op::pair_norm(Op::pair_vectors(r));                        // [B, N, N, 1]
    const auto pair = Op::mul(Op::exp(Op::mul_const(Op::square(ee), -torch::ones({1}, d_opts(r)))), ee);
    const auto pair_sum = Op::sum_features(Op::sum_electrons(pair, 2));        // [B, N]
    auto total = Op::reshape_features(Op::add(one, pair_sum), 1, {1});  // [B, N, 1]
    const auto l = Op::sum_electrons(total, 1);                                // [B, 1]
    return Op::signed_logsumexp(torch::ones({l_batch(r), 1}, d_opts(r)), l);
  }
  LogPsi forward(const torch::Tensor& r, const SystemTensors&) override { return log_psi<torch::Tensor>(r); }
  SignedFwdLap forward_laplacian(const FwdLap& r, const SystemTensors&) override { return log_psi<FwdLap>(r); }
  std::string type() const override { return "test_mixed_ops"; }

 private:
  static torch::TensorOptions d_opts(const torch::Tensor& r) { return r.options(); }
  static torch::TensorOptions d_opts(const FwdLap& r) { return r.value.options(); }
  static int64_t l_batch(const torch::Tensor& r) { return r.size(0); }
  static int64_t l_batch(const FwdLap& r) { return r.value.size(0); }
  torch::nn::Linear lin_{nullptr};
  torch::Tensor centre_;
};

TEST(FwdLapOps, LogExpSquareProductsAndSumsAgreeWithJvpAndFiniteDifferences) {
  MixedOps wf;
  torch::manual_seed(22);
  const auto r = torch::randn({5, 4, 3}, torch::kFloat64);
  const auto f = kinetic("forward", wf, r), j = kinetic("jvp", wf, r);
  const auto fd = test::finite_differences(wf, r, 1e-3);
  expect_close(f.laplacian, j.laplacian, 1e-10, 0, "laplacian vs jvp");
  expect_close(f.grad_sq, j.grad_sq, 1e-10, 0, "grad_sq vs jvp");
  expect_close(f.laplacian, fd.laplacian, 1e-6, 1e-6, "laplacian vs finite differences");
}

TEST(FwdLapOps, InPlaceFastPathsLeaveSharedValuesUntouched) {
  using Op = Blocks<FwdLap>;
  torch::NoGradGuard ng;
  torch::manual_seed(23);
  const auto r = Op::positions(torch::randn({3, 4, 3}, torch::kFloat64));
  const auto dense = Op::mean_electrons(Op::pair_vectors(r), 2);  // fresh dense [B, N, 3]
  const FwdLap shared = dense;                                     // second handle
  const auto before = dense.jac.clone();
  const auto t = Op::tanh(FwdLap(dense));                          // rvalue, but not exclusive
  const auto s = Op::add(FwdLap(dense), dense);
  EXPECT_TRUE(torch::equal(shared.jac, before));
  EXPECT_TRUE(torch::allclose(s.jac, 2 * before));
  // An exclusive rvalue is updated in place and gives the same numbers as the copying path.
  auto fresh = Op::mean_electrons(Op::pair_vectors(r), 2);
  EXPECT_TRUE(fresh.exclusive());
  const auto u = Op::tanh(std::move(fresh));
  EXPECT_TRUE(torch::allclose(u.jac, t.jac, 1e-15, 0));
  EXPECT_TRUE(torch::allclose(u.lap, t.lap, 1e-15, 0));
}

}  // namespace

namespace {

/// A one-layer self-attention toy (the ops of Psiformer-like ansätze):
/// h = tanh(W_in·[r_i − c, |r_i − c|]), ĥ = LayerNorm(h), A = softmax(q kᵀ/√d) over electrons,
/// o = A v, log|ψ| = Σ_i Σ_f tanh(o)_f · w_f + Σ_i Σ_f LayerNorm(o)²_f / 10.
class AttentionToy : public WaveFunction {
 public:
  AttentionToy() {
    torch::manual_seed(31);
    in_ = register_module("in", torch::nn::Linear(4, 6));
    q_ = register_module("q", torch::nn::Linear(6, 4));
    k_ = register_module("k", torch::nn::Linear(6, 4));
    v_ = register_module("v", torch::nn::Linear(6, 5));
    to(torch::kFloat64);
    w_ = register_buffer("w", torch::randn({5}, torch::kFloat64));
    centre_ = register_buffer("centre", torch::tensor({{0.1, 0.2, -0.3}}, torch::kFloat64));
  }
  template <class T>
  typename Blocks<T>::Signed log_psi(const T& r) {
    using Op = Blocks<T>;
    const auto d = Op::reshape_features(Op::sub_centres(r, centre_), 1, {3});  // [B, N, 3]
    const auto h = Op::layer_norm(Op::tanh(Op::linear(in_, Op::cat({d, Op::norm(d)}))));
    const auto a = Op::softmax(Op::electron_dot(Op::linear(q_, h), Op::linear(k_, h), 0.5));
    const auto o = Op::electron_mix(a, Op::linear(v_, h));                    // [B, N, 5]
    const auto ln = Op::layer_norm(o);
    const auto per = Op::add(Op::sum_features(Op::mul_const(Op::tanh(o), w_)),
                             Op::sum_features(Op::mul_const(Op::square(ln), torch::full({1}, 0.1, w_.options()))));
    const auto l = Op::sum_electrons(Op::reshape_features(per, 1, {1}), 1);  // [B, 1]
    return Op::signed_logsumexp(torch::ones({l_batch(r), 1}, w_.options()), l);
  }
  LogPsi forward(const torch::Tensor& r, const SystemTensors&) override { return log_psi<torch::Tensor>(r); }
  SignedFwdLap forward_laplacian(const FwdLap& r, const SystemTensors&) override { return log_psi<FwdLap>(r); }
  std::string type() const override { return "test_attention_toy"; }

 private:
  static int64_t l_batch(const torch::Tensor& r) { return r.size(0); }
  static int64_t l_batch(const FwdLap& r) { return r.value.size(0); }
  torch::nn::Linear in_{nullptr}, q_{nullptr}, k_{nullptr}, v_{nullptr};
  torch::Tensor w_, centre_;
};

}  // namespace

TEST(FwdLapOps, LayerNormSoftmaxAttentionAgreeWithJvpReverseAndFiniteDifferences) {
  AttentionToy wf;
  torch::manual_seed(32);
  const auto r = torch::randn({4, 5, 3}, torch::kFloat64);
  const auto f = kinetic("forward", wf, r), j = kinetic("jvp", wf, r), b = kinetic("reverse", wf, r);
  expect_close(f.laplacian, j.laplacian, 1e-10, 0, "laplacian vs jvp");
  expect_close(f.grad_sq, j.grad_sq, 1e-10, 0, "grad_sq vs jvp");
  expect_close(f.laplacian, b.laplacian, 1e-10, 0, "laplacian vs reverse");
  test::expect_matches_finite_differences(f, wf, SystemTensors{}, r, 1e-3);
}

namespace {

/// The ops of the Orbformer's electron half: sigmoid, softplus, per-electron constants,
/// sums over centres, layer norm with a given ε, pair features turned into electron features
/// (also for a sliced block of partners) as attention biases:
/// g_i = Σ_m c_im ⊙ W·[σ(r_i − R_m), softplus|r_i − R_m|], ĝ = LayerNorm_ε(g),
/// A = softmax(ĝ ĝᵀ·0.3 + [r_ij, softplus r_ij]·a), log|ψ| = Σ tanh(A ĝ) + Σ_{i, j>0} p_ij².
class OrbformerOpsToy : public WaveFunction {
 public:
  explicit OrbformerOpsToy(int64_t n) {
    torch::manual_seed(41);
    lin_ = register_module("lin", torch::nn::Linear(4, 5));
    lin_->to(torch::kFloat64);
    centres_ = register_buffer("centres", torch::tensor({{0.1, 0.2, -0.3}, {-0.5, 0.4, 0.6}}, torch::kFloat64));
    c_ = register_buffer("c", torch::rand({n, 2, 5}, torch::kFloat64) + 0.5);
    a_ = register_buffer("a", torch::tensor({{-0.7, 1.0}}, torch::kFloat64));
  }
  template <class T>
  typename Blocks<T>::Signed log_psi(const T& r) {
    using Op = Blocks<T>;
    const int64_t n = c_.size(0);
    const auto v = Op::sub_centres(r, centres_);                                       // [B, N, 2, 3]
    const auto f = Op::cat({Op::sigmoid(v), Op::softplus(Op::norm(v))});                // [B, N, 2, 4]
    const auto g = Op::sum_centres(Op::mul_const_electrons(Op::linear(lin_, f), c_));  // [B, N, 5]
    const auto h = Op::layer_norm(g, 0.5);
    const auto ee = Op::pair_norm(Op::pair_vectors(r));                                // [B, N, N, 1]
    const auto pe = Op::cat({ee, Op::softplus(Op::mul_const(ee, torch::full({1}, -1.3, c_.options())))});
    const auto bias = Op::reshape_features(Op::pair_to_electron(Op::affine(pe, a_, {})), 1, {n});  // [B, N, N]
    const auto att = Op::softmax(Op::add(Op::electron_dot(h, h, 0.3), bias));
    const auto mix = Op::sum_features(Op::tanh(Op::electron_mix(att, h)));             // [B, N]
    const auto part = Op::pair_to_electron(Op::slice_electrons(pe, 2, 1, n));          // [B, N, 2, N−1]
    const auto sq = Op::sum_features(Op::reshape_features(Op::square(part), 1, {2 * (n - 1)}));
    const auto l = Op::sum_electrons(Op::reshape_features(Op::add(mix, sq), 1, {1}), 1);  // [B, 1]
    return Op::signed_logsumexp(torch::ones({batch(r), 1}, c_.options()), l);
  }
  LogPsi forward(const torch::Tensor& r, const SystemTensors&) override { return log_psi<torch::Tensor>(r); }
  SignedFwdLap forward_laplacian(const FwdLap& r, const SystemTensors&) override { return log_psi<FwdLap>(r); }
  std::string type() const override { return "test_orbformer_ops_toy"; }

 private:
  static int64_t batch(const torch::Tensor& r) { return r.size(0); }
  static int64_t batch(const FwdLap& r) { return r.value.size(0); }
  torch::nn::Linear lin_{nullptr};
  torch::Tensor centres_, c_, a_;
};

}  // namespace

TEST(FwdLapOps, SigmoidSoftplusCentreSumsAndPairBiasesAgreeWithJvpReverseAndFiniteDifferences) {
  OrbformerOpsToy wf(4);
  torch::manual_seed(42);
  const auto r = torch::randn({4, 4, 3}, torch::kFloat64);
  const auto f = kinetic("forward", wf, r), j = kinetic("jvp", wf, r), b = kinetic("reverse", wf, r);
  expect_close(f.laplacian, j.laplacian, 1e-10, 0, "laplacian vs jvp");
  expect_close(f.grad_sq, j.grad_sq, 1e-10, 0, "grad_sq vs jvp");
  expect_close(f.laplacian, b.laplacian, 1e-10, 0, "laplacian vs reverse");
  expect_close(f.grad_sq, b.grad_sq, 1e-10, 0, "grad_sq vs reverse");
  test::expect_matches_finite_differences(f, wf, SystemTensors{}, r, 1e-3);
}

TEST(FwdLapOps, AttentionOnOneElectronInputsMatchesTheDensePath) {
  // electron_dot and electron_mix take one-electron (local) inputs without making them dense;
  // the result must equal the dense path's, also for electron ranges that start elsewhere.
  using Op = Blocks<FwdLap>;
  torch::NoGradGuard ng;
  torch::manual_seed(33);
  const auto r = Op::positions(torch::randn({3, 5, 3}, torch::kFloat64));
  const auto w1 = torch::randn({4, 4}, torch::kFloat64), w2 = torch::randn({4, 4}, torch::kFloat64);
  const auto c = torch::tensor({{0.1, 0.2, -0.3}}, torch::kFloat64);
  const auto x = Op::reshape_features(Op::sub_centres(r, c), 1, {3});
  const auto h = Op::tanh(Op::cat({x, Op::norm(x)}));  // local [B, 5, 4]
  const auto q = Op::affine(h, w1, {}), k = Op::affine(h, w2, {});
  ASSERT_EQ(q.kind, Sparsity::local);
  auto same = [](const FwdLap& a, const FwdLap& b, const char* what) {
    ASSERT_EQ(a.kind, Sparsity::dense) << what;
    ASSERT_EQ(a.offset, b.offset) << what;
    EXPECT_LE((a.value - b.value).abs().max().item<double>(), 1e-13) << what;
    EXPECT_LE((a.jac - b.jac).abs().max().item<double>(), 1e-13) << what;
    EXPECT_LE((a.lap - b.lap).abs().max().item<double>(), 1e-13) << what;
  };
  const std::array<int64_t, 2> ranges[] = {{0, 5}, {1, 4}, {3, 5}};
  for (const auto& [lo, hi] : ranges) {
    const auto qs = Op::slice_electrons(q, 1, lo, hi);  // rows: electrons lo..hi
    const auto s_local = Op::electron_dot(qs, k, 0.7), s_dense = Op::electron_dot(qs.to_dense(), k.to_dense(), 0.7);
    same(s_local, s_dense, "electron_dot");
    const auto ks = Op::slice_electrons(k, 1, lo, hi);  // columns: electrons lo..hi
    same(Op::electron_dot(q, ks, 0.7), Op::electron_dot(q.to_dense(), ks.to_dense(), 0.7), "electron_dot, key range");
    const auto a = Op::softmax(s_dense);  // [B, hi - lo, 5]
    same(Op::electron_mix(a, h), Op::electron_mix(a, h.to_dense()), "electron_mix");
  }
}
