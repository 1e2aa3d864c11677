#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>

#include "blocks/tensor_blocks.hpp"
#include "common/test_util.hpp"
#include "common/walker_batches.hpp"
#include "core/timer.hpp"
#include "models/ferminet/ferminet.hpp"
#include "models/registry.hpp"
#include "parallel/walker_threads.hpp"
#include "train/optimizer.hpp"
#include "train/per_sample_gradients.hpp"

using namespace nnvmc;

namespace {

/// log|ψ| = Σ_i (w·r_i + b): one linear layer (3 → 1, with bias) at every electron, so
/// ∂log|ψ|/∂y = 1 at each of the N positions and the K-FAC factors have a closed form.
class LinearLayerPsi final : public WaveFunction {
 public:
  LinearLayerPsi() {
    torch::manual_seed(4);
    lin = register_module("lin", torch::nn::Linear(3, 1));
    lin->to(torch::kFloat64);
  }
  LogPsi forward(const torch::Tensor& r, const SystemTensors&) override {
    using Op = Blocks<torch::Tensor>;
    const auto l = Op::sum_features(Op::sum_electrons(Op::linear(lin, Op::positions(r)), 1));  // [B]
    return {torch::ones_like(l), l};
  }
  std::string type() const override { return "linear_layer_test"; }
  /// θ = [w, b] as one row [1, 4].
  torch::Tensor theta() const { return torch::cat({lin->weight, lin->bias.unsqueeze(1)}, 1).detach().clone(); }
  torch::nn::Linear lin{nullptr};
};

/// log|ψ| = Σ_i Σ_f r_if c_f: a parameter entering through mul_const (a diagonal block).
class ScalePsi final : public WaveFunction {
 public:
  ScalePsi() { c = register_parameter("c", torch::tensor({0.3, -0.2, 0.5}, torch::kFloat64)); }
  LogPsi forward(const torch::Tensor& r, const SystemTensors&) override {
    using Op = Blocks<torch::Tensor>;
    const auto l = Op::sum_features(Op::sum_electrons(Op::mul_const(Op::positions(r), c), 1));
    return {torch::ones_like(l), l};
  }
  std::string type() const override { return "scale_test"; }
  torch::Tensor c;
};

OptimOptions kfac_options(double damping, double norm_constraint = 0) {
  OptimOptions o;
  o.type = "kfac";
  o.lr = 0.05;
  o.lr_delay = 100;
  o.clip_width = 1e9;  // the toy energies are not clipped
  o.kfac.damping = damping;
  o.kfac.norm_constraint = norm_constraint;
  return o;
}

/// The documented K-FAC update of the linear toy from its factors. @return δ [1, 4]
torch::Tensor linear_update(const torch::Tensor& a, const torch::Tensor& g, double s, const torch::Tensor& grad,
                            double damping) {
  const double pi = std::sqrt((a.diagonal().mean() / g.diagonal().mean()).item<double>());
  const double root = std::sqrt(damping * s);
  const auto ga = g + root / pi * torch::eye(g.size(0), torch::kFloat64);
  const auto aa = a + pi * root * torch::eye(a.size(0), torch::kFloat64);
  return s * torch::linalg_solve(ga, grad, true).matmul(torch::linalg_inv(aa));
}

/// Inputs x̃ = [r, 1] [B, N, 4], weights w_b = (e_b − ē)/B, and the factors of the linear toy.
struct LinearFactors {
  torch::Tensor a, g, grad;
  double s;
  LinearFactors(const torch::Tensor& r, const torch::Tensor& e) {
    const int64_t b = r.size(0), n = r.size(1);
    const auto x = torch::cat({r, torch::ones({b, n, 1}, torch::kFloat64)}, -1).reshape({-1, 4});
    a = x.t().mm(x) / b;
    g = torch::full({1, 1}, 2.0 * n, torch::kFloat64);  // 2 Σ_s g² / B with g = 1
    s = static_cast<double>(n);
    const auto w = (e - e.mean()) / b;
    grad = (w.view({-1, 1, 1}) * x.reshape({b, n, 4})).sum({0, 1}).unsqueeze(0);  // [1, 4]
  }
};

struct Data {
  torch::Tensor r, e;
  explicit Data(int64_t b, int64_t n = 3, std::uint64_t seed = 1) {
    torch::manual_seed(seed);
    r = torch::randn({b, n, 3}, torch::kFloat64);
    e = torch::randn({b}, torch::kFloat64);
  }
};

}  // namespace

TEST(Kfac, FirstStepIsTheFactoredDampedUpdateOfALinearLayer) {
  const Data d(40);
  LinearLayerPsi wf;
  const auto before = wf.theta();
  const double damping = 1e-2;
  auto opt = make_optimizer(kfac_options(damping), wf);
  StageTimers timers;
  ASSERT_TRUE(opt->step(wf, test::one_batch(d.r, d.e), 0, timers));
  const LinearFactors f(d.r, d.e);
  const auto expect = before - 0.05 * linear_update(f.a, f.g, f.s, f.grad, damping);
  EXPECT_LT(test::rel_diff(wf.theta(), expect), 1e-10);
}

TEST(Kfac, OnePositionAndOneOutputGiveTheExactFisher) {
  // With S = 1 and a scalar output, A ⊗ G is exactly 2·E[O Oᵀ] (O = [r, 1]): with a tiny damping
  // the step is the natural gradient (2 E[O Oᵀ])⁻¹ E[(E_L − Ē) O].
  const Data d(60, 1);
  LinearLayerPsi wf;
  const auto before = wf.theta();
  auto opt = make_optimizer(kfac_options(1e-12), wf);
  StageTimers timers;
  ASSERT_TRUE(opt->step(wf, test::one_batch(d.r, d.e), 0, timers));
  const auto o = torch::cat({d.r.reshape({60, 3}), torch::ones({60, 1}, torch::kFloat64)}, 1);
  const auto fisher = 2.0 * o.t().mm(o) / 60;
  const auto grad = o.t().mv((d.e - d.e.mean()) / 60);
  const auto expect = before - 0.05 * torch::linalg_solve(fisher, grad, true).unsqueeze(0);
  EXPECT_LT(test::rel_diff(wf.theta(), expect), 1e-8);
}

TEST(Kfac, OtherParametersGetADiagonalBlock) {
  const Data d(30);
  ScalePsi wf;
  const auto before = wf.c.detach().clone();
  const double damping = 0.1;
  auto opt = make_optimizer(kfac_options(damping), wf);
  StageTimers timers;
  ASSERT_TRUE(opt->step(wf, test::one_batch(d.r, d.e), 0, timers));
  const auto o = d.r.sum(1);  // per-walker gradient [B, 3]
  const auto diag = 2.0 * o.square().mean(0);
  const auto grad = o.t().mv((d.e - d.e.mean()) / 30);
  EXPECT_LT(test::rel_diff(wf.c, before - 0.05 * grad / (diag + damping)), 1e-12);
}

TEST(Kfac, NormConstraintBoundsLearningRateSquaredTimesUpdateDotGradient) {
  const Data d(40);
  LinearLayerPsi wf;
  const auto before = wf.theta();
  const double damping = 1e-2, bound = 1e-7;
  auto opt = make_optimizer(kfac_options(damping, bound), wf);
  StageTimers timers;
  ASSERT_TRUE(opt->step(wf, test::one_batch(d.r, d.e), 0, timers));
  const LinearFactors f(d.r, d.e);
  const auto delta = linear_update(f.a, f.g, f.s, f.grad, damping);
  const double q = (delta * f.grad).sum().item<double>();
  ASSERT_GT(0.05 * 0.05 * q, bound);  // the bound is active
  const double lr = std::sqrt(bound / q);
  EXPECT_LT(test::rel_diff(wf.theta(), before - lr * delta), 1e-10);
  // the rate the step applied, which result.h5 records, is the constrained one
  EXPECT_NEAR(opt->applied_learning_rate(0), lr, 1e-12 * lr);
  EXPECT_EQ(opt->learning_rate(0), 0.05);
}

TEST(Kfac, FactorsAreMovingAveragesOverSteps) {
  const Data d1(40, 3, 1), d2(40, 3, 2);
  LinearLayerPsi wf;
  const double damping = 1e-2;
  auto o = kfac_options(damping);
  o.kfac.cov_ema_decay = 0.8;
  auto opt = make_optimizer(o, wf);
  StageTimers timers;
  ASSERT_TRUE(opt->step(wf, test::one_batch(d1.r, d1.e), 0, timers));
  const auto after1 = wf.theta();
  ASSERT_TRUE(opt->step(wf, test::one_batch(d2.r, d2.e), 1, timers));
  const LinearFactors f1(d1.r, d1.e), f2(d2.r, d2.e);
  const auto a = (0.8 * f1.a + f2.a) / 1.8;  // normalised weighted average
  const double lr1 = 0.05 / (1 + 1.0 / 100);
  const auto expect = after1 - lr1 * linear_update(a, f2.g, f2.s, f2.grad, damping);
  EXPECT_LT(test::rel_diff(wf.theta(), expect), 1e-10);
}

TEST(Kfac, StateRoundTripContinuesTheSameSteps) {
  const auto sys = load_molecule("lih", test::molecules_dir());
  FermiNet a(test::small_ferminet(8, 4, 2, 2), sys), b(test::small_ferminet(8, 4, 2, 2), sys);
  const auto tensors = test::tensors(sys);
  const auto r1 = test::random_positions(sys, 12, 1), r2 = test::random_positions(sys, 12, 2);
  const auto e = torch::linspace(-8.2, -7.8, 12, torch::kFloat64);
  const auto o = kfac_options(1e-3, 1e-3);
  StageTimers timers;
  auto oa = make_optimizer(o, a), ob = make_optimizer(o, b);
  ASSERT_TRUE(oa->step(a, {WalkerBatch{&tensors, r1, e}}, 0, timers));
  ASSERT_TRUE(ob->step(b, {WalkerBatch{&tensors, r1, e}}, 0, timers));
  const auto saved = ob->state();
  EXPECT_EQ(saved.count("kfac/ema_weight"), 1u);
  auto resumed = make_optimizer(o, b);
  resumed->load_state(saved);
  ASSERT_TRUE(oa->step(a, {WalkerBatch{&tensors, r2, e}}, 1, timers));
  ASSERT_TRUE(resumed->step(b, {WalkerBatch{&tensors, r2, e}}, 1, timers));
  const auto pa = trainable_parameters(a), pb = trainable_parameters(b);
  for (size_t k = 0; k < pa.size(); ++k) EXPECT_TRUE(torch::equal(pa[k], pb[k])) << k;
}

TEST(Kfac, NonFiniteStepIsRejectedAndKeepsParametersAndState) {
  Data d(20);
  LinearLayerPsi wf;
  const auto before = wf.theta();
  auto opt = make_optimizer(kfac_options(1e-3), wf);
  StageTimers timers;
  d.r[3][1][2] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(opt->step(wf, test::one_batch(d.r, d.e), 0, timers));
  EXPECT_TRUE(torch::equal(wf.theta(), before));
  EXPECT_TRUE(opt->state().empty());
}

// The trainer undoes a rejected step by loading the state from before it: before the first step
// that is the empty state, which left the rejected step's factors in place (a user audit found
// them in the "last good" checkpoint, ema_weight 1).
TEST(Kfac, LoadingTheStateFromBeforeTheFirstStepForgetsTheFactorsOfLaterSteps) {
  const Data d1(20, 3, 1), d2(20, 3, 2);
  LinearLayerPsi wf, fresh;
  const auto theta0 = wf.theta();
  auto opt = make_optimizer(kfac_options(1e-3), wf), fresh_opt = make_optimizer(kfac_options(1e-3), fresh);
  StageTimers timers;
  const TensorMap before = opt->state();
  ASSERT_TRUE(before.empty());
  ASSERT_TRUE(opt->step(wf, test::one_batch(d1.r, d1.e), 0, timers));  // (the step the trainer rejects)
  opt->load_state(before);
  EXPECT_TRUE(opt->state().empty());
  {
    torch::NoGradGuard ng;
    wf.lin->weight.copy_(theta0.slice(1, 0, 3));
    wf.lin->bias.copy_(theta0.slice(1, 3, 4).squeeze(1));
  }
  ASSERT_TRUE(opt->step(wf, test::one_batch(d2.r, d2.e), 0, timers));
  ASSERT_TRUE(fresh_opt->step(fresh, test::one_batch(d2.r, d2.e), 0, timers));
  EXPECT_TRUE(torch::equal(wf.theta(), fresh.theta()));
}

TEST(Kfac, GradientMatchesTheJacobianOnFermiNet) {
  // With a huge damping δ → g/λ for every block: the step is −lr/λ times the energy gradient
  // E[(E_L − Ē)·O], which the exact Jacobian gives independently.
  const auto sys = load_molecule("lih", test::molecules_dir());
  FermiNet wf(test::small_ferminet(), sys);
  const auto tensors = test::tensors(sys);
  const auto r = test::random_positions(sys, 10, 3);
  const auto e = torch::linspace(-8.3, -7.7, 10, torch::kFloat64);
  const auto params = trainable_parameters(wf);
  const auto jac = per_sample_log_gradients(wf, tensors, r, 10);
  const auto grad = jac.t().mv((e - e.mean()) / 10);
  std::vector<torch::Tensor> before;
  for (const auto& p : params) before.push_back(p.detach().clone().reshape(-1));
  const double damping = 1e14, lr = 1e12;  // a step of lr/λ·g: well above the parameters' rounding
  auto o = kfac_options(damping);
  o.lr = lr;
  auto opt = make_optimizer(o, wf);
  StageTimers timers;
  ASSERT_TRUE(opt->step(wf, {WalkerBatch{&tensors, r, e}}, 0, timers));
  std::vector<torch::Tensor> change;
  for (size_t k = 0; k < params.size(); ++k) change.push_back(params[k].detach().reshape(-1) - before[k]);
  const auto step = torch::cat(change) * (-damping / lr);
  EXPECT_LT(test::rel_diff(step, grad), 1e-5);
}

// On two threads the recorded passes of the two walker parts run at once, each into its own
// sums; the steps equal those of one pass to rounding (the first step also finds the blocks).
TEST(Kfac, WalkerPartsOnTwoThreadsGiveTheStepsOfOnePass) {
  const int previous = at::get_num_threads();
  at::set_num_threads(2);
  const auto sys = load_molecule("lih", test::molecules_dir());
  const auto tensors = test::tensors(sys);
  const auto r = test::random_positions(sys, 40, 3);  // parts of 20 walkers
  const auto e = torch::linspace(-8.3, -7.7, 40, torch::kFloat64);
  std::map<bool, torch::Tensor> after;
  for (bool parts : {false, true}) {
    parallel::set_walker_threads(parts);
    FermiNet wf(test::small_ferminet(), sys);  // same initial parameters (small_ferminet seeds)
    auto opt = make_optimizer(kfac_options(1e-3), wf);
    StageTimers timers;
    for (int t = 0; t < 2; ++t) ASSERT_TRUE(opt->step(wf, {WalkerBatch{&tensors, r, e}}, t, timers));
    std::vector<torch::Tensor> flat;
    for (const auto& p : trainable_parameters(wf)) flat.push_back(p.detach().reshape(-1).clone());
    after[parts] = torch::cat(flat);
  }
  parallel::set_walker_threads(true);
  at::set_num_threads(previous);
  FermiNet initial(test::small_ferminet(), sys);
  std::vector<torch::Tensor> flat;
  for (const auto& p : trainable_parameters(initial)) flat.push_back(p.detach().reshape(-1));
  EXPECT_GT(test::rel_diff(after[false], torch::cat(flat)), 1e-6);  // the steps moved the parameters
  EXPECT_LT(test::rel_diff(after[true], after[false]), 1e-11);
}

// Orbformer's orbital generator and nuclear network are molecule-level: their linear maps are
// recorded as shared uses (one input for all walkers) and keep diagonal blocks, while the
// electron-side layers get Kronecker blocks.
TEST(Kfac, HypernetworkLayersKeepDiagonalBlocksAndElectronLayersGetKroneckerBlocks) {
  const auto sys = load_molecule("lih", test::molecules_dir());
  const auto tensors = test::tensors(sys);
  ModelConfig model;
  model.type = "orbformer";
  model.orbformer = test::small_orbformer(2);
  const auto wf = make_model(model, sys, torch::kFloat64, torch::kCPU);
  const auto r = test::random_positions(sys, 8, 3);
  const auto e = torch::linspace(-8.3, -7.7, 8, torch::kFloat64);
  auto opt = make_optimizer(kfac_options(1e-3), *wf);
  StageTimers timers;
  ASSERT_TRUE(opt->step(*wf, {WalkerBatch{&tensors, r, e}}, 0, timers));
  const auto state = opt->state();
  int generator = 0;
  for (const auto& p : wf->named_parameters()) {
    const auto& name = p.key();
    if (name.rfind("orbital_generator.", 0) == 0 || name.rfind("nuclei.", 0) == 0) {
      ++generator;
      EXPECT_EQ(state.count("kfac/D/" + name), 1u) << name;
      EXPECT_EQ(state.count("kfac/A/" + name), 0u) << name;
    }
  }
  EXPECT_GT(generator, 10);
  EXPECT_EQ(state.count("kfac/A/electrons.query0.weight"), 1u);
}

// The local energies of every optimizer's gradient are clipped to median ± width·MAD (the median
// of an even count the mean of the two middle values); width 0 leaves them as they are (a user
// audit: clipping could not be switched off).
TEST(LocalEnergyClipping, ClipsToMedianPlusMinusWidthMadAndZeroWidthIsOff) {
  const auto e = torch::tensor({-1.0, 0.0, 1.0, 2.0, 100.0}, torch::kFloat64);
  // median 1, MAD (2 + 1 + 0 + 1 + 99) / 5 = 20.6
  const auto clipped = clip_local_energies(e, 2.0);
  EXPECT_DOUBLE_EQ(clipped[4].item<double>(), 1.0 + 2.0 * 20.6);
  EXPECT_DOUBLE_EQ(clipped[0].item<double>(), -1.0);
  EXPECT_TRUE(torch::equal(clip_local_energies(e, 0.0), e));
}
