#include <gtest/gtest.h>

#include "common/test_util.hpp"
#include "common/walker_batches.hpp"
#include "core/errors.hpp"
#include "core/timer.hpp"
#include "batching/peak_memory.hpp"
#include "core/system.hpp"
#include "models/registry.hpp"
#include "models/determinant_balance.hpp"
#include "train/natural_gradient.hpp"
#include "train/per_sample_gradients.hpp"

using namespace nnvmc;

namespace {

/// log|ψ(r)| = θ·vec(r): per-walker gradients are the flattened positions, so every
/// natural-gradient quantity has a closed form.
class LinearLogPsi final : public WaveFunction {
 public:
  explicit LinearLogPsi(int64_t n) { theta = register_parameter("theta", torch::zeros({3 * n}, torch::kFloat64)); }
  LogPsi forward(const torch::Tensor& r, const SystemTensors&) override {
    const auto logabs = r.reshape({r.size(0), -1}).mv(theta);
    return {torch::ones_like(logabs), logabs};
  }
  std::string type() const override { return "linear_test"; }
  torch::Tensor theta;
};

OptimOptions options(const std::string& type, double damping) {
  OptimOptions o;
  o.type = type;
  o.lr = 1.0;
  o.clip_width = 1e9;  // no clipping: the toy energies are exact
  o.sr.damping = damping;
  o.sr.norm_constraint = 0;
  o.sr.chunk_walkers = 7;
  return o;
}

/// Quadratic toy: walkers r [B, N, 3], θ₀, θ*; E_i = vec(r_i)·(θ₀ − θ*), so that Ōᵀε = S(θ₀ − θ*)
/// is the gradient of ½(θ − θ*)ᵀS(θ − θ*) and the natural-gradient step with lr 1 is exact.
struct Quadratic {
  int64_t n = 4, b = 50;
  torch::Tensor r, theta0, target, e;
  Quadratic() {
    torch::manual_seed(7);
    r = torch::randn({b, n, 3}, torch::kFloat64);
    theta0 = torch::randn({3 * n}, torch::kFloat64);
    target = torch::randn({3 * n}, torch::kFloat64);
    e = r.reshape({b, -1}).mv(theta0 - target) - 3.0;
  }
  /// S = cov(vec r) with 1/B normalisation. @return [P, P]
  torch::Tensor fisher() const {
    const auto x = r.reshape({b, -1});
    const auto c = x - x.mean(0, true);
    return c.t().matmul(c) / static_cast<double>(b);
  }
  /// θ after one step of `type`.
  torch::Tensor step(const OptimOptions& o) const {
    LinearLogPsi wf(n);
    { torch::NoGradGuard g; wf.theta.copy_(theta0); }
    auto opt = make_optimizer(o, wf);
    StageTimers timers;
    EXPECT_TRUE(opt->step(wf, test::one_batch(r, e), 0, timers));
    return wf.theta.detach().clone();
  }
};

}  // namespace

TEST(NaturalGradient, UndampedSrStepLandsOnTheMinimumOfAQuadratic) {
  const Quadratic q;
  EXPECT_LT(test::rel_diff(q.step(options("sr", 0.0)), q.target), 1e-10);
}

TEST(NaturalGradient, DampedStepsEqualTheAnalyticStepForEveryVariant) {
  const Quadratic q;
  const double lambda = 1e-3;
  const auto s = q.fisher();
  const auto eye = torch::eye(s.size(0), torch::kFloat64);
  // δ = (S + λ)⁻¹ S (θ₀ − θ*)
  const auto delta = torch::linalg_solve(s + lambda * eye, s.mv(q.theta0 - q.target), true);
  const auto expect = q.theta0 - delta;
  for (const char* type : {"sr", "minsr", "spring"})
    EXPECT_LT(test::rel_diff(q.step(options(type, lambda)), expect), 1e-9) << type;
}

TEST(NaturalGradient, MinSrEqualsSrWhenWalkersOutnumberParameters) {
  torch::manual_seed(3);
  const auto jac = torch::randn({40, 10}, torch::kFloat64) * torch::linspace(0.1, 3.0, 10, torch::kFloat64);
  const auto p = make_sr_problem(jac, torch::randn({40}, torch::kFloat64));
  for (double lambda : {1e-4, 1e-2})
    EXPECT_LT(test::rel_diff(minsr_direction(p, lambda), sr_direction(p, lambda)), 1e-8) << lambda;
}

// Ō stays implicit (J is never centred); its products must equal those of the explicitly centred
// and scaled matrix, also when the column means are large next to the spread (|m|²/Σσ² = 100).
TEST(NaturalGradient, ImplicitCentringGivesTheProductsOfTheCentredJacobian) {
  torch::manual_seed(13);
  const int64_t p = 40;
  const auto mean = torch::randn({p}, torch::kFloat64);
  const auto spread = 0.1 * mean.norm() / std::sqrt(static_cast<double>(p));  // |m|²/Σσ² = 100
  const std::vector<torch::Tensor> jac{torch::randn({7, p}, torch::kFloat64) * spread + mean,
                                       torch::randn({5, p}, torch::kFloat64) * spread - 2 * mean};
  const std::vector<torch::Tensor> e{torch::randn({7}, torch::kFloat64), torch::randn({5}, torch::kFloat64)};
  std::vector<torch::Tensor> blocks;
  for (const auto& j : jac) blocks.push_back((j - j.mean(0, true)) / std::sqrt(2.0 * j.size(0)));
  const auto expected = torch::cat(blocks, 0);
  const auto x = torch::randn({p}, torch::kFloat64), y = torch::randn({12}, torch::kFloat64);
  for (const bool several : {false, true}) {
    const auto problem = several ? make_sr_problem(jac, e) : make_sr_problem(jac[0], e[0]);
    const auto o = several ? expected : (jac[0] - jac[0].mean(0, true)) / std::sqrt(7.0);
    const auto yy = y.slice(0, 0, o.size(0));
    torch::Tensor g;
    problem.gram(g);
    EXPECT_LT(test::rel_diff(problem.centred(), o), 1e-14) << several;
    EXPECT_LT(test::rel_diff(g, o.matmul(o.t())), 1e-12) << several;
    EXPECT_LT(test::rel_diff(problem.o_mv(x), o.mv(x)), 1e-12) << several;
    EXPECT_LT(test::rel_diff(problem.ot_mv(yy), o.t().mv(yy)), 1e-12) << several;
  }
  // One molecule: the problem reads the caller's Jacobian and leaves it as it was.
  const auto before = jac[0].clone();
  const auto problem = make_sr_problem(jac[0], e[0]);
  (void)spring_direction(problem, 1e-3, 0.9, x);
  EXPECT_TRUE(problem.j.is_same(jac[0]));
  EXPECT_TRUE(torch::equal(jac[0], before));
}

TEST(NaturalGradient, SrAndMinSrOptimizersMakeTheSameUpdateOnATinyModel) {
  const Quadratic q;  // B = 50 > P = 12
  EXPECT_LT(test::rel_diff(q.step(options("minsr", 1e-3)), q.step(options("sr", 1e-3))), 1e-8);
}

TEST(NaturalGradient, SpringStepSolvesTheProximalLeastSquaresProblem) {
  // SPRING's δ minimises |Ōδ − ε|² + λ|δ − μδ₋|²: (S + λ)δ = Ōᵀε + λμδ₋.
  torch::manual_seed(5);
  const auto p = make_sr_problem(torch::randn({12, 30}, torch::kFloat64), torch::randn({12}, torch::kFloat64));
  const auto prev = torch::randn({30}, torch::kFloat64);
  const double lambda = 0.05, mu = 0.9;
  const auto o = p.centred();
  const auto s = o.t().matmul(o);
  const auto expect = torch::linalg_solve(s + lambda * torch::eye(30, torch::kFloat64),
                                          o.t().mv(p.eps) + lambda * mu * prev, true);
  EXPECT_LT(test::rel_diff(spring_direction(p, lambda, mu, prev), expect), 1e-9);
}

TEST(NaturalGradient, NormConstraintBoundsTheFisherNormOfTheStep) {
  const Quadratic q;
  auto o = options("minsr", 1e-3);
  o.sr.norm_constraint = 1e-4;
  o.sr.norm = "fisher";
  const auto change = q.step(o) - q.theta0;
  const auto x = q.r.reshape({q.b, -1});
  const double fisher = (x - x.mean(0, true)).mv(change).square().sum().item<double>() / q.b;
  EXPECT_NEAR(fisher, 1e-4, 1e-12);  // the unconstrained step is far larger, so the bound is active
}

TEST(NaturalGradient, EuclideanNormConstraintBoundsTheParameterStep) {
  const Quadratic q;
  auto o = options("spring", 1e-3);
  o.sr.norm_constraint = 1e-6;
  o.sr.norm = "euclidean";
  const auto change = q.step(o) - q.theta0;
  EXPECT_NEAR(change.square().sum().item<double>(), 1e-6, 1e-14);
  // the rate the step applied (result.h5's learning_rate) is the constrained one: |lr δ| = 1e-3
  LinearLogPsi wf(q.n);
  {
    torch::NoGradGuard g;
    wf.theta.copy_(q.theta0);
  }
  auto opt = make_optimizer(o, wf);
  StageTimers timers;
  EXPECT_DOUBLE_EQ(opt->applied_learning_rate(0), opt->learning_rate(0));  // (before a step: the schedule's)
  ASSERT_TRUE(opt->step(wf, test::one_batch(q.r, q.e), 0, timers));
  const double applied = opt->applied_learning_rate(0);
  EXPECT_LT(applied, opt->learning_rate(0));
  EXPECT_NEAR((wf.theta - q.theta0).norm().item<double>(), 1e-3, 1e-12);
  EXPECT_GT(applied, 0);
}

TEST(NaturalGradient, BudgetBelowOneWalkersJacobianIsAClearError) {
  const Quadratic q;
  LinearLogPsi wf(q.n);
  auto opt = make_optimizer(options("spring", 1e-3), wf, batching::MemoryBudget(1024));
  StageTimers timers;
  try {
    opt->step(wf, test::one_batch(q.r, q.e), 0, timers);
    FAIL() << "expected BudgetError";
  } catch (const BudgetError& e) {
    // (what the step keeps, the Jacobian and kernel of all its walkers, is checked first)
    EXPECT_NE(std::string(e.what()).find("run.memory_budget = 1.00 KiB is too small for the spring step"),
              std::string::npos)
        << e.what();
  }
}

TEST(NaturalGradient, AmpleBudgetGivesTheSameStep) {
  const Quadratic q;
  const auto o = options("spring", 1e-3);
  LinearLogPsi a(q.n), b(q.n);
  { torch::NoGradGuard g; a.theta.copy_(q.theta0); b.theta.copy_(q.theta0); }
  StageTimers timers;
  EXPECT_TRUE(make_optimizer(o, a)->step(a, test::one_batch(q.r, q.e), 0, timers));
  EXPECT_TRUE(make_optimizer(o, b, batching::MemoryBudget(std::int64_t{1} << 30))->step(b, test::one_batch(q.r, q.e), 0, timers));
  EXPECT_TRUE(torch::allclose(a.theta, b.theta, 1e-12, 0));
}

TEST(NaturalGradient, NonFiniteJacobianRejectsTheStepAndKeepsParameters) {
  const Quadratic q;
  LinearLogPsi wf(q.n);
  auto o = options("spring", 1e-3);
  auto opt = make_optimizer(o, wf);
  StageTimers timers;
  auto r = q.r.clone();
  r[3][1][2] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(opt->step(wf, test::one_batch(r, q.e), 0, timers));
  EXPECT_TRUE(torch::equal(wf.theta, torch::zeros_like(wf.theta)));
  EXPECT_TRUE(opt->state().empty());  // no SPRING history from a rejected step
}

TEST(NaturalGradient, SpdSolveFallsBackToJitterForASingularMatrix) {
  const auto v = torch::tensor({1.0, 2.0, 3.0}, torch::kFloat64);
  const auto a = torch::outer(v, v);  // rank 1
  const auto x = spd_solve(a, v);
  EXPECT_TRUE(torch::isfinite(x).all().item<bool>());
  EXPECT_LT((a.mv(x) - v).abs().max().item<double>(), 1e-6);
}

// The determinant-balance penalty enters a natural-gradient step as an extra right-hand side v
// in parameter space, (S + λ)δ = Ōᵀε + v; minsr and spring reach it in sample space through the
// Woodbury identity, for P > B where v has a part outside the span of the walkers' gradients.
TEST(NaturalGradient, AnExtraRightHandSideGivesTheSameStepInParameterAndSampleSpace) {
  torch::manual_seed(11);
  const int64_t b = 6, p = 15;
  const auto jac = torch::randn({b, p}, torch::kFloat64);
  const auto e = torch::randn({b}, torch::kFloat64);
  const auto v = 0.3 * torch::randn({p}, torch::kFloat64);
  const auto problem = make_sr_problem(jac, e);
  const auto o = problem.centred();
  const double damping = 0.05;
  const auto direct = sr_direction(problem, damping, v);
  const auto s = o.t().matmul(o) + damping * torch::eye(p, torch::kFloat64);
  EXPECT_LT(test::rel_diff(s.mv(direct), o.t().mv(problem.eps) + v), 1e-12);
  EXPECT_LT(test::rel_diff(minsr_direction(problem, damping, v), direct), 1e-10);
  EXPECT_LT(test::rel_diff(spring_direction(problem, damping, 0.0, {}, v), direct), 1e-10);
  // With momentum: δ = μδ₋ + (S + λ)⁻¹(Ōᵀ(ε − μŌδ₋) + v).
  const auto previous = torch::randn({p}, torch::kFloat64);
  const double mu = 0.9;
  const auto expected = mu * previous + torch::linalg_solve(s, o.t().mv(problem.eps - mu * o.mv(previous)) + v);
  EXPECT_LT(test::rel_diff(spring_direction(problem, damping, mu, previous, v), expected), 1e-10);
  // No extra term: the plain directions.
  EXPECT_LT(test::rel_diff(minsr_direction(problem, damping, {}), minsr_direction(problem, damping)), 0.0 + 1e-15);
}

// optim.beta1, beta2 and epsilon reach Adam: two steps on the linear toy (gradient
// g = 2/B Σ_i (E_i − Ē) vec(r_i), closed form) against the bias-corrected Adam update by hand.
TEST(Adam, TakesItsBetasAndEpsilonFromTheConfig) {
  const Quadratic q;
  OptimOptions o = options("adam", 0.0);
  o.lr = 0.2;
  o.lr_delay = 4.0;
  o.beta1 = 0.5;
  o.beta2 = 0.6;
  o.epsilon = 0.3;  // far from the defaults, so that each one shows in the update
  const auto gradient = [&](const torch::Tensor& e) {
    return 2.0 * ((e - e.mean()).unsqueeze(1) * q.r.reshape({q.b, -1})).mean(0);
  };
  const torch::Tensor e1 = q.e, e2 = 0.5 * q.e.square();  // two steps with different gradients
  LinearLogPsi wf(q.n);
  {
    torch::NoGradGuard g;
    wf.theta.copy_(q.theta0);
  }
  auto opt = make_optimizer(o, wf);
  StageTimers timers;
  ASSERT_TRUE(opt->step(wf, test::one_batch(q.r, e1), 0, timers));
  ASSERT_TRUE(opt->step(wf, test::one_batch(q.r, e2), 1, timers));
  const auto g1 = gradient(e1), g2 = gradient(e2);
  const auto m = o.beta1 * (1 - o.beta1) * g1 + (1 - o.beta1) * g2;
  const auto v = o.beta2 * (1 - o.beta2) * g1.square() + (1 - o.beta2) * g2.square();
  const auto m_hat = m / (1 - o.beta1 * o.beta1), v_hat = v / (1 - o.beta2 * o.beta2);
  const double lr0 = o.lr, lr1 = o.lr / (1 + 1 / o.lr_delay);
  const auto expected = q.theta0 - lr0 * g1 / (g1.abs() + o.epsilon) - lr1 * m_hat / (v_hat.sqrt() + o.epsilon);
  EXPECT_LT(test::rel_diff(wf.theta.detach(), expected), 1e-12);
  // The defaults give another point: the options were used, not ignored.
  LinearLogPsi plain(q.n);
  {
    torch::NoGradGuard g;
    plain.theta.copy_(q.theta0);
  }
  OptimOptions d = options("adam", 0.0);
  d.lr = o.lr;
  d.lr_delay = o.lr_delay;
  auto opt_d = make_optimizer(d, plain);
  ASSERT_TRUE(opt_d->step(plain, test::one_batch(q.r, e1), 0, timers));
  ASSERT_TRUE(opt_d->step(plain, test::one_batch(q.r, e2), 1, timers));
  EXPECT_GT(test::rel_diff(plain.theta.detach(), expected), 1e-3);
}

// Adam's moments of another shape than their parameter (an altered checkpoint) are refused when
// loaded, naming the parameter; they used to fail in the first step, in libtorch's words.
TEST(Adam, StateOfAnotherShapeIsRefusedWhenLoaded) {
  const Quadratic q;
  LinearLogPsi wf(q.n);
  auto opt = make_optimizer(options("adam", 0.0), wf);
  StageTimers timers;
  ASSERT_TRUE(opt->step(wf, test::one_batch(q.r, q.e), 0, timers));
  TensorMap state = opt->state();
  ASSERT_FALSE(state.empty());
  opt->load_state(state);  // its own: fine
  for (auto& [name, t] : state)
    if (name.rfind("adam/exp_avg/", 0) == 0) t = torch::zeros({t.numel() + 5}, t.options());
  try {
    opt->load_state(state);
    FAIL() << "expected CheckpointError";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("the file is damaged"), std::string::npos) << e.what();
  }
}

// Adam's gradient pass held every activation of every walker at once, outside run.memory_budget
// (200000 He walkers: 3.3 GB with a 64 MiB budget). Under a budget it goes through chunks of
// walkers that fit it, and the step is the same: FermiNet, and the Orbformer, whose
// determinant-balance penalty Adam adds by default (a mean over each chunk, weighted by its
// walkers).
TEST(Adam, GradientPassesFitTheBudgetAndGiveTheSameStep) {
  const System sys = load_molecule("lih", default_molecules_dir());
  const SystemTensors tensors = test::tensors(sys);
  for (const char* type : {"ferminet", "orbformer"}) {
    SCOPED_TRACE(type);
    ModelConfig model;
    model.type = type;
    test::use_small_models(model);
    const auto one = make_model(model, sys, torch::kFloat64, torch::kCPU);
    test::use_small_models(model);  // (reseeds: the same initial parameters)
    const auto chunked = make_model(model, sys, torch::kFloat64, torch::kCPU);
    const auto r = test::random_positions(sys, 256, 1);
    torch::manual_seed(3);
    const auto e = -8.0 + 0.1 * torch::randn({256}, torch::kFloat64);
    OptimOptions o;
    o.type = "adam";
    o.lr = 1e-2;
    ASSERT_GT(determinant_balance_weight(o), 0.0);
    if (std::string(type) == "orbformer") {  // (the penalty is built: the ansatz has determinant weights)
      ASSERT_TRUE(one->determinant_log_weights(r.slice(0, 0, 2), tensors).defined());
    }
    StageTimers timers;
    const std::vector<WalkerBatch> batch{WalkerBatch{&tensors, r, e}};
    std::int64_t one_pass = 0, peak = 0;
    {
      batching::PeakMemoryScope scope;
      ASSERT_TRUE(make_optimizer(o, *one)->step(*one, batch, 0, timers));
      one_pass = scope.peak_bytes();
    }
    const batching::MemoryBudget budget(one_pass / 4);
    auto opt = make_optimizer(o, *chunked, budget);
    {
      batching::PeakMemoryScope scope;
      ASSERT_TRUE(opt->step(*chunked, batch, 0, timers));
      peak = scope.peak_bytes();
    }
    EXPECT_LE(peak, budget.bytes()) << "one pass took " << one_pass;
    const auto a = one->parameters(), b = chunked->parameters();
    ASSERT_EQ(a.size(), b.size());
    // (the first Adam step is about lr · sign(g): the gradients themselves are compared)
    for (std::size_t k = 0; k < a.size(); ++k) {
      if (!a[k].grad().defined()) {
        EXPECT_FALSE(b[k].grad().defined()) << k;
        continue;
      }
      ASSERT_TRUE(b[k].grad().defined()) << k;
      EXPECT_LT(test::rel_diff(b[k].grad(), a[k].grad()), 1e-12) << k;
      EXPECT_LT(test::rel_diff(b[k].detach(), a[k].detach()), 1e-12) << k;
    }
  }
}
