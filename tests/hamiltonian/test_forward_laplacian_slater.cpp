/// An ansatz written once over Blocks<T> in a test (a Slater determinant of Gaussians per spin)
/// gets the forward Laplacian by overriding WaveFunction::forward_laplacian with its FwdLap program; checked on well-conditioned and
/// nearly singular orbital matrices against jvp, reverse and finite differences.
#include <gtest/gtest.h>

#include "common/test_util.hpp"
#include "laplacian_checks.hpp"
#include "blocks/tensor_blocks.hpp"

using namespace nnvmc;
using test::expect_close;
using test::kinetic;

namespace {

/// ψ = Π_spins det[exp(−α_o |r_i − c_o|²)], written once for any T with Blocks<T>.
class GaussianSlater : public WaveFunction {
 public:
  GaussianSlater(int64_t n_up, int64_t n_down, torch::Tensor centres, torch::Tensor alphas)
      : n_up_(n_up), n_down_(n_down) {
    centres_ = register_buffer("centres", centres);
    alphas_ = register_parameter("alphas", alphas);
  }
  template <class T>
  typename Blocks<T>::Signed log_psi(const T& r) {
    using Op = Blocks<T>;
    const auto d2 = Op::sum_features(Op::square(Op::sub_centres(r, centres_)));  // [B, N, N]
    const auto phi = Op::exp(Op::mul_const(d2, -alphas_));
    torch::Tensor sign;
    T logabs;
    bool first = true;
    const std::array<std::array<int64_t, 2>, 2> spins{{{0, n_up_}, {n_up_, n_up_ + n_down_}}};
    for (const auto& [lo, hi] : spins) {
      if (hi == lo) continue;
      const auto block = Op::slice_features(Op::slice_electrons(phi, 1, lo, hi), lo, hi);
      const auto det = Op::log_det(Op::reshape_features(block, 1, {1, hi - lo}));  // [B, 1]
      sign = first ? det.sign : sign * det.sign;
      logabs = first ? det.logabs : Op::add(logabs, det.logabs);
      first = false;
    }
    return Op::signed_logsumexp(sign, logabs);
  }
  LogPsi forward(const torch::Tensor& r, const SystemTensors&) override { return log_psi<torch::Tensor>(r); }
  SignedFwdLap forward_laplacian(const FwdLap& r, const SystemTensors&) override { return log_psi<FwdLap>(r); }
  std::string type() const override { return "test_gaussian_slater"; }

 private:
  int64_t n_up_, n_down_;
  torch::Tensor centres_, alphas_;
};

/// 3 up + 2 down electrons; `gap` separates the centres of up-orbitals 0 and 1 (small gap ⇒
/// nearly linearly dependent orbitals ⇒ nearly singular matrices).
GaussianSlater make_slater(double gap) {
  auto centres = torch::tensor({{0.0, 0.0, 0.0}, {gap, 0.0, 0.0}, {0.4, -0.6, 0.8},
                                {0.2, 0.1, 0.0}, {-0.5, 0.3, 0.6}}, torch::kFloat64);
  auto alphas = torch::tensor({0.6, 0.6, 0.35, 0.5, 0.8}, torch::kFloat64);
  return GaussianSlater(3, 2, centres, alphas);
}

TEST(ForwardLaplacianSlater, AgreesWithJvpReverseAndFiniteDifferences) {
  auto wf = make_slater(0.7);
  torch::manual_seed(3);
  const auto r = torch::randn({6, 5, 3}, torch::kFloat64);
  const auto f = kinetic("forward", wf, r), j = kinetic("jvp", wf, r), b = kinetic("reverse", wf, r);
  const auto fd = test::finite_differences(wf, r, 1e-3);
  expect_close(f.laplacian, j.laplacian, 1e-10, 0, "laplacian vs jvp");
  expect_close(f.laplacian, b.laplacian, 1e-10, 0, "laplacian vs reverse");
  expect_close(f.grad_sq, j.grad_sq, 1e-10, 0, "grad_sq vs jvp");
  expect_close(f.laplacian, fd.laplacian, 1e-6, 1e-6, "laplacian vs finite differences");
  expect_close(f.grad_sq, fd.grad_sq, 1e-7, 1e-7, "grad_sq vs finite differences");
}

TEST(ForwardLaplacianSlater, NearlySingularOrbitalMatricesMatchFiniteDifferences) {
  // Orbitals 0 and 1 differ by a centre shift of 1e-4: cond(A) ~ 1e4–1e5, while ψ (∝ the
  // shift times a smooth function) has ordinary derivatives that finite differences resolve.
  auto wf = make_slater(1e-4);
  torch::manual_seed(4);
  const auto r = torch::randn({6, 5, 3}, torch::kFloat64);
  {
    torch::NoGradGuard ng;
    const auto phi = torch::exp(-0.6 * (r.slice(1, 0, 3).unsqueeze(2) -
                                        torch::tensor({{0.0, 0.0, 0.0}, {1e-4, 0.0, 0.0}}, r.options()))
                                           .square().sum(-1));
    EXPECT_LT((phi.select(2, 0) - phi.select(2, 1)).abs().max().item<double>(), 1e-4);
  }
  const auto f = kinetic("forward", wf, r), b = kinetic("reverse", wf, r);
  const auto fd = test::finite_differences(wf, r, 1e-3);
  expect_close(f.laplacian, fd.laplacian, 1e-5, 1e-5, "laplacian vs finite differences");
  expect_close(f.grad_sq, fd.grad_sq, 1e-5, 1e-5, "grad_sq vs finite differences");
  expect_close(f.laplacian, b.laplacian, 1e-5, 1e-5, "laplacian vs reverse");
}

}  // namespace

namespace {

/// ψ = det[φ_o(r_i)] + det[χ_o(r_i)] of Gaussians (one spin, 3 electrons): χ's orbitals 0 and
/// 1 have centres `gap` apart, so its matrix is nearly singular and its weight in ψ small, while
/// ψ itself is not near a node — the case of a multi-determinant ansatz with one determinant
/// (nearly) switched off. Parameters in the dtype asked for.
class TwoDeterminants : public WaveFunction {
 public:
  TwoDeterminants(double gap, torch::Dtype dtype) {
    const auto o = torch::TensorOptions().dtype(dtype);
    centres_ = register_buffer("centres", torch::tensor({{0.0, 0.0, 0.0}, {0.9, 0.1, 0.0}, {0.4, -0.6, 0.8},
                                                         {0.0, 0.0, 0.0}, {gap, 0.0, 0.0}, {-0.5, 0.3, 0.6}}, o));
    alphas_ = register_buffer("alphas", torch::tensor({0.6, 0.5, 0.35, 0.6, 0.6, 0.8}, o));
  }
  template <class T>
  typename Blocks<T>::Signed log_psi(const T& r) {
    using Op = Blocks<T>;
    const auto d2 = Op::sum_features(Op::square(Op::sub_centres(r, centres_)));  // [B, 3, 6]
    const auto phi = Op::exp(Op::mul_const(d2, -alphas_));
    const auto det = Op::log_det(Op::reshape_features(phi, 1, {2, 3}));            // [B, 2]
    return Op::signed_logsumexp(det.sign, det.logabs);
  }
  LogPsi forward(const torch::Tensor& r, const SystemTensors&) override { return log_psi<torch::Tensor>(r); }
  SignedFwdLap forward_laplacian(const FwdLap& r, const SystemTensors&) override { return log_psi<FwdLap>(r); }
  std::string type() const override { return "test_two_determinants"; }

 private:
  torch::Tensor centres_, alphas_;
};

}  // namespace

// A nearly singular determinant of small weight: in float32 its log-space Laplacian terms (~1/gap²
// each, cancelling in ∇²ψ_k/ψ_k) lost the local energy (a LiH Psiformer sample was off by 0.26 Eh,
// a user audit); log_det and signed_logsumexp now work in float64 there, and float32 agrees with
// float64 at the same (float32) positions as closely as jvp does.
TEST(ForwardLaplacianSlater, Float32KeepsANearlySingularDeterminantOfSmallWeightAccurate) {
  torch::manual_seed(5);
  const auto r32 = torch::randn({64, 3, 3}, torch::kFloat32);
  const auto r64 = r32.to(torch::kFloat64);
  for (const double gap : {1e-3, 1e-4}) {
    TwoDeterminants wf32(gap, torch::kFloat32), wf64(gap, torch::kFloat64);
    const auto exact = kinetic("forward", wf64, r64);
    const auto e64 = (exact.laplacian + exact.grad_sq);
    const auto f = kinetic("forward", wf32, r32), j = kinetic("jvp", wf32, r32);
    const double scale = e64.abs().max().item<double>();
    const double forward_error = ((f.laplacian + f.grad_sq).to(torch::kFloat64) - e64).abs().max().item<double>();
    const double jvp_error = ((j.laplacian + j.grad_sq).to(torch::kFloat64) - e64).abs().max().item<double>();
    EXPECT_LT(forward_error, 1e-4 * scale) << "gap " << gap << ", jvp's error " << jvp_error;
    EXPECT_LT(forward_error, std::max(2 * jvp_error, 1e-5 * scale)) << "gap " << gap;
  }
}
