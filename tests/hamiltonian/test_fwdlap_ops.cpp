/// FwdLap ops that FermiNet does not use (log, exp, square, products of equal layouts, global
/// sums) checked through a small test ansatz written once over Blocks<T>, and the in-place
/// fast paths checked not to touch values that are shared.
#include <gtest/gtest.h>

#include "hamiltonian/forward_laplacian/programs.hpp"
#include "laplacian_checks.hpp"
#include "models/ferminet/tensor_blocks.hpp"

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
  LogPsi forward(const torch::Tensor& r) override { return log_psi<torch::Tensor>(r); }
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
  register_forward_laplacian_program("test_mixed_ops", [](WaveFunction& wf, const FwdLap& r) {
    return static_cast<MixedOps&>(wf).log_psi<FwdLap>(r);
  });
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
