#include <gtest/gtest.h>

#include <set>

#include "common/test_util.hpp"
#include "core/system.hpp"
#include "models/ferminet/ferminet.hpp"
#include "models/registry.hpp"
#include "train/per_sample_gradients.hpp"

using namespace nnvmc;

namespace {
System lih() { return load_molecule("lih", default_molecules_dir()); }

/// Batch gradient ∇θ Σ_i w_i log|ψ(r_i)| flattened like the Jacobian. @return [P]
torch::Tensor weighted_batch_gradient(WaveFunction& wf, const torch::Tensor& r, const torch::Tensor& w) {
  const auto params = trainable_parameters(wf);
  const auto g = torch::autograd::grad({(wf.forward(r, test::tensors(lih())).logabs * w).sum()}, params, {}, false, false, true);
  std::vector<torch::Tensor> flat;
  for (size_t k = 0; k < params.size(); ++k)
    flat.push_back(g[k].defined() ? g[k].reshape(-1) : torch::zeros({params[k].numel()}, torch::kFloat64));
  return torch::cat(flat);
}
}  // namespace

TEST(PerSampleGradients, SumToTheBatchGradient) {
  const auto sys = lih();
  FermiNet wf(test::small_ferminet(), sys);
  const auto r = test::random_positions(sys, 11);
  const auto jac = per_sample_log_gradients(wf, test::tensors(sys), r, 4);  // chunks 4, 4, 3
  ASSERT_EQ(jac.size(0), 11);
  ASSERT_EQ(jac.size(1), parameter_count(trainable_parameters(wf)));
  const auto batch = weighted_batch_gradient(wf, r, torch::ones({11}, torch::kFloat64));
  EXPECT_LT((jac.sum(0) - batch).abs().max().item<double>(), 1e-10 * (1 + batch.abs().max().item<double>()));
}

TEST(PerSampleGradients, EachRowIsThatWalkersGradient) {
  const auto sys = lih();
  FermiNet wf(test::small_ferminet(), sys);
  const auto r = test::random_positions(sys, 6, 3);
  const auto jac = per_sample_log_gradients(wf, test::tensors(sys), r, 6);
  // Weighting walker i alone picks row i (any weights: the rows are a linear basis).
  const auto w = torch::tensor({0.5, -1.0, 2.0, 0.0, 1.5, -0.25}, torch::kFloat64);
  const auto batch = weighted_batch_gradient(wf, r, w);
  EXPECT_LT((w.matmul(jac) - batch).abs().max().item<double>(), 1e-10 * (1 + batch.abs().max().item<double>()));
  for (int64_t i = 0; i < 6; ++i) {
    const auto single = weighted_batch_gradient(wf, r.slice(0, i, i + 1), torch::ones({1}, torch::kFloat64));
    EXPECT_LT((jac[i] - single).abs().max().item<double>(), 1e-10 * (1 + single.abs().max().item<double>())) << i;
  }
}

TEST(PerSampleGradients, ChunkSizeDoesNotChangeTheJacobian) {
  const auto sys = lih();
  FermiNet wf(test::small_ferminet(), sys);
  const auto r = test::random_positions(sys, 7, 5);
  const auto a = per_sample_log_gradients(wf, test::tensors(sys), r, 1), b = per_sample_log_gradients(wf, test::tensors(sys), r, 3);
  EXPECT_LT((a - b).abs().max().item<double>(), 1e-12 * (1 + a.abs().max().item<double>()));
}

TEST(PerSampleGradients, AddToParametersFollowsTheJacobianLayout) {
  const auto sys = lih();
  FermiNet wf(test::small_ferminet(), sys);
  const auto params = trainable_parameters(wf);
  const auto before = params[0].detach().clone();
  const auto p = parameter_count(params);
  add_to_parameters(params, torch::arange(p, torch::kFloat64), 2.0);
  const auto expect = before + 2.0 * torch::arange(before.numel(), torch::kFloat64).reshape(before.sizes());
  EXPECT_LT((params[0] - expect).abs().max().item<double>(), 1e-12);
}

// ---- One recorded backward pass (train/recorded_pass.hpp) against the vmapped method ----

#include "batching/budget.hpp"
#include "batching/held_memory.hpp"
#include "batching/peak_memory.hpp"
#include "hamiltonian/local_energy.hpp"
#include "blocks/tensor_blocks.hpp"
#include "core/timer.hpp"
#include "models/analytic/hydrogenic.hpp"
#include "train/natural_gradient.hpp"
#include "parallel/walker_threads.hpp"
#include "blocks/per_sample.hpp"
#include "train/recorded_pass.hpp"

namespace {

/// Small Psiformer and Orbformer model blocks (in that order).
std::vector<ModelConfig> small_transformer_models() {
  ModelConfig psiformer;
  psiformer.type = "psiformer";
  psiformer.psiformer = test::small_psiformer();
  ModelConfig orbformer;
  orbformer.type = "orbformer";
  orbformer.orbformer = test::small_orbformer(2);
  return {psiformer, orbformer};
}

/// Largest |a − b| relative to 1 + max|b|.
double rel_err(const torch::Tensor& a, const torch::Tensor& b) {
  return ((a - b).abs().max() / (1 + b.abs().max())).item<double>();
}

/// The one-pass Jacobian of `walkers` random walkers checked against the vmap method (1e-10);
/// returns the recorded pass of the same walkers.
RecordedPass checked_pass(WaveFunction& wf, const System& sys, std::int64_t walkers, std::uint64_t seed,
                          std::int64_t vmap_chunk) {
  const auto r = test::random_positions(sys, walkers, seed);
  const auto params = trainable_parameters(wf);
  const auto fast = per_sample_log_gradients(wf, test::tensors(sys), r, walkers);
  const auto old = per_sample_log_gradients_vmap(wf, test::tensors(sys), r, params, vmap_chunk);
  EXPECT_LT(rel_err(fast, old), 1e-10);
  return record_pass(wf, test::tensors(sys), r, params);
}

/// A toy over the building blocks that uses parameters in every way the recorder tells
/// apart: one linear layer applied twice (electrons and pairs), a layer-norm scale and offset
/// through mul_const/add_const, an affine map whose weight is computed from a parameter
/// (exp of a leaf), envelope π/σ, and one parameter used outside the blocks (fallback).
class BlocksToy final : public WaveFunction {
 public:
  explicit BlocksToy(int64_t atoms) {
    torch::manual_seed(11);
    const auto o = torch::TensorOptions().dtype(torch::kFloat64);
    lin = register_module("lin", torch::nn::Linear(3, 5));
    lin->to(torch::kFloat64);
    scale = register_parameter("scale", 1 + 0.1 * torch::randn({5}, o));
    offset = register_parameter("offset", 0.1 * torch::randn({5}, o));
    log_w = register_parameter("log_w", 0.3 * torch::randn({2, 5}, o));
    pi = register_parameter("pi", 1 + 0.1 * torch::randn({2, atoms}, o));
    sigma = register_parameter("sigma", 1 + 0.1 * torch::randn({2, atoms}, o));
    alpha = register_parameter("alpha", torch::tensor(0.2, o));
  }
  LogPsi forward(const torch::Tensor& r, const SystemTensors& sys) override {
    using Op = Blocks<torch::Tensor>;
    auto h = Op::tanh(Op::linear(lin, r));                                       // [B, N, 5]
    h = Op::add(h, Op::mean_electrons(Op::tanh(Op::linear(lin, Op::pair_vectors(r))), 2));
    h = Op::add_const(Op::mul_const(Op::layer_norm(h), scale), offset);          // [B, N, 5]
    auto o = Op::affine(h, torch::exp(log_w), torch::Tensor());                 // [B, N, 2]
    const auto d = Op::reshape_features(Op::norm(Op::sub_centres(r, sys.nuclei)), 1, {sys.n_atoms()});
    o = Op::mul(o, Op::envelope(d, pi, sigma));                                 // [B, N, 2]
    const auto logabs = Op::sum_features(Op::sum_electrons(o, 1)) + alpha * r.square().sum({1, 2});
    return {torch::ones_like(logabs), logabs};
  }
  std::string type() const override { return "blocks_toy"; }
  torch::nn::Linear lin{nullptr};
  torch::Tensor scale, offset, log_w, pi, sigma, alpha;
};

/// A toy with a molecule-level part: shared linear maps of the nuclear centre (an input with no
/// graph). `first`'s output is a leaf while recording and enters a block directly (as a
/// constant), `second` maps it further (a computed constant), and `outside`'s output is also
/// used by plain tensor code, outside the blocks.
class SharedToy final : public WaveFunction {
 public:
  SharedToy() {
    torch::manual_seed(13);
    first = register_module("first", torch::nn::Linear(3, 4));
    second = register_module("second", torch::nn::Linear(4, 4));
    outside = register_module("outside", torch::nn::Linear(3, 1));
    lin = register_module("lin", torch::nn::Linear(3, 4));
    to(torch::kFloat64);
  }
  LogPsi forward(const torch::Tensor& r, const SystemTensors& sys) override {
    using Op = Blocks<torch::Tensor>;
    const auto centre = sys.nuclei.mean(0);                              // [3]
    const auto a = per_sample::shared_linear(first, centre);             // [4]
    const auto c = per_sample::shared_linear(second, torch::tanh(a));    // [4]
    const auto o = per_sample::shared_linear(outside, centre);           // [1]
    auto h = Op::tanh(Op::linear(lin, r));                               // [B, N, 4]
    h = Op::mul_const(Op::mul_const(h, a), c);
    const auto logabs = Op::sum_features(Op::sum_electrons(h, 1)) + 0.1 * o.sum() * r.square().sum({1, 2});
    return {torch::ones_like(logabs), logabs};
  }
  std::string type() const override { return "shared_toy"; }
  torch::nn::Linear first{nullptr}, second{nullptr}, outside{nullptr}, lin{nullptr};
};

}  // namespace

TEST(RecordedPass, OneBackwardPassEqualsTheVmapMethodForFermiNet) {
  const auto sys = lih();
  FermiNet wf(test::small_ferminet(), sys);
  const auto pass = checked_pass(wf, sys, 9, 4, 4);
  // Every FermiNet parameter goes through the building blocks: no fallback.
  for (size_t k = 0; k < pass.fallback.size(); ++k) EXPECT_FALSE(pass.fallback[k]) << k;
}

// The same check for the other ansätze written over the building blocks, plus single-walker
// backward passes (PauliNet's are in test_paulinet_training.cpp).
TEST(RecordedPass, OneBackwardPassEqualsTheVmapMethodAndSingleWalkerPassesForPsiformerAndOrbformer) {
  const auto sys = lih();
  for (const auto& model : small_transformer_models()) {
    const auto wf = make_model(model, sys, torch::kFloat64, torch::kCPU);
    const auto r = test::random_positions(sys, 7, 5);
    const auto params = trainable_parameters(*wf);
    const auto fast = per_sample_log_gradients(*wf, test::tensors(sys), r, 7);
    const auto old = per_sample_log_gradients_vmap(*wf, test::tensors(sys), r, params, 3);
    EXPECT_LT(rel_err(fast, old), 1e-10) << model.type;
    EXPECT_GT(fast.abs().sum().item<double>(), 0.0) << model.type;
    // And against one plain backward per walker (no vmap of any kind): Orbformer's generated
    // orbitals and Psiformer's parameter-derived constants are pulled back batched.
    for (int64_t w = 0; w < r.size(0); w += 3) {
      const auto out = wf->forward(r.narrow(0, w, 1), test::tensors(sys)).logabs.sum();
      const auto g = torch::autograd::grad({out}, params, {}, false, false, true);
      std::vector<torch::Tensor> flat;
      for (size_t k = 0; k < g.size(); ++k)
        flat.push_back(g[k].defined() ? g[k].reshape({-1}) : torch::zeros({params[k].numel()}, torch::kFloat64));
      EXPECT_LT(rel_err(fast[w], torch::cat(flat)), 1e-10) << model.type << " walker " << w;
    }
    const auto pass = record_pass(*wf, test::tensors(sys), r, params);
    int fallback = 0;
    for (size_t k = 0; k < params.size(); ++k) fallback += pass.fallback[k];
    std::printf("[ info     ] %s: %zu parameter tensors, %d outside the blocks (vmap fallback)\n", model.type.c_str(),
                params.size(), fallback);
    EXPECT_EQ(fallback, 0) << model.type << ": every parameter goes through the building blocks";
  }
}

// Orbformer's orbital generator and nuclear network run once per molecule. Their linear maps
// are recorded as shared uses (per_sample::shared_linear): the pull-back stops at their
// outputs and their weight gradients are written like the walkers' own layers', never as dense
// per-sample blocks; the Jacobian equals the vmap one.
TEST(RecordedPass, HypernetworkLinearMapsAreRecordedAsSharedUsesAndWrittenDirectly) {
  const auto sys = lih();
  const auto wf = make_model(small_transformer_models()[1], sys, torch::kFloat64, torch::kCPU);
  const auto r = test::random_positions(sys, 6, 7);
  const auto params = trainable_parameters(*wf);
  const auto pass = record_pass(*wf, test::tensors(sys), r, params);
  std::set<int> shared;
  for (const auto& e : pass.linear)
    if (e.shared) {
      EXPECT_EQ(e.x.stride(0), 0);  // one input for all walkers
      if (e.weight >= 0) shared.insert(e.weight);
    }
  int generator_weights = 0;
  for (const auto& p : wf->named_parameters()) {
    const auto& name = p.key();
    const bool molecule_level = name.rfind("orbital_generator.", 0) == 0 || name.rfind("nuclei.block", 0) == 0 ||
                                name.rfind("orbital_projection_", 0) == 0 || name.rfind("envelope_coef_", 0) == 0;
    if (!molecule_level || name.size() < 7 || name.compare(name.size() - 7, 7, ".weight") != 0) continue;
    ++generator_weights;
    int k = -1;
    for (size_t j = 0; j < params.size(); ++j)
      if (params[j].unsafeGetTensorImpl() == p.value().unsafeGetTensorImpl()) k = static_cast<int>(j);
    ASSERT_GE(k, 0) << name;
    EXPECT_EQ(shared.count(k), 1u) << name << " is a recorded shared use";
    EXPECT_FALSE(pass.dense[k].defined()) << name << " has no dense per-sample block";
  }
  EXPECT_GT(generator_weights, 10);
  auto jac = torch::empty({6, parameter_count(params)}, torch::kFloat64);
  write_jacobian(pass, params, jac);
  EXPECT_LT(rel_err(jac, per_sample_log_gradients_vmap(*wf, test::tensors(sys), r, params, 3)), 1e-10);
}

// Shared maps in the two shapes the Orbformer does not have: an output that is a leaf (its
// input has no graph) used directly as a block constant is still pulled back, and an output
// also used outside the blocks sends its map to the vmapped fallback instead of losing that use.
TEST(RecordedPass, SharedMapsWithLeafOutputsOrUsesOutsideTheBlocksAreExact) {
  const auto sys = lih();
  SharedToy wf;
  const auto params = trainable_parameters(wf);
  const auto pass = checked_pass(wf, sys, 5, 8, 2);
  const auto index = [&](const torch::Tensor& t) {
    for (size_t k = 0; k < params.size(); ++k)
      if (params[k].unsafeGetTensorImpl() == t.unsafeGetTensorImpl()) return static_cast<int>(k);
    return -1;
  };
  EXPECT_TRUE(pass.fallback[index(wf.outside->weight)]);
  EXPECT_TRUE(pass.fallback[index(wf.outside->bias)]);
  std::set<int> shared;
  for (const auto& e : pass.linear)
    if (e.shared) shared.insert(e.weight);
  EXPECT_EQ(shared, (std::set<int>{index(wf.first->weight), index(wf.second->weight)}));
  EXPECT_FALSE(pass.fallback[index(wf.first->weight)]);
  EXPECT_GT(per_sample_gradient(pass, params, index(wf.first->weight)).abs().sum().item<double>(), 0.0);
}

TEST(RecordedPass, OneBackwardPassEqualsTheVmapMethodInFloat32) {
  const auto sys = lih();
  FermiNet wf(test::small_ferminet(), sys);
  wf.to(torch::kFloat32);
  const auto r = test::random_positions(sys, 5, 6).to(torch::kFloat32);
  const auto sys32 = test::tensors(sys, torch::kFloat32);
  const auto fast = per_sample_log_gradients(wf, sys32, r, 5);
  const auto old = per_sample_log_gradients_vmap(wf, sys32, r, trainable_parameters(wf), 5);
  EXPECT_LT(rel_err(fast, old), 1e-5);
  // Orbformer in float32: its shared maps take the batched-GEMM path (float32 inputs, float64
  // Jacobian) with an input expanded over the walkers.
  const auto orb = make_model(small_transformer_models()[1], sys, torch::kFloat32, torch::kCPU);
  const auto fast_orb = per_sample_log_gradients(*orb, sys32, r, 5);
  const auto old_orb = per_sample_log_gradients_vmap(*orb, sys32, r, trainable_parameters(*orb), 5);
  EXPECT_LT(rel_err(fast_orb, old_orb), 1e-5);
  EXPECT_GT(fast_orb.abs().sum().item<double>(), 0.0);
}

TEST(RecordedPass, EveryKindOfParameterUseIsExactAndOnlyOutsideUsesFallBack) {
  const auto sys = lih();
  BlocksToy wf(static_cast<int64_t>(sys.atoms.size()));
  const auto r = test::random_positions(sys, 7, 8);
  const auto params = trainable_parameters(wf);
  const auto fast = per_sample_log_gradients(wf, test::tensors(sys), r, 7);
  const auto old = per_sample_log_gradients_vmap(wf, test::tensors(sys), r, params, 3);
  EXPECT_LT(rel_err(fast, old), 1e-10);
  const auto pass = record_pass(wf, test::tensors(sys), r, params);
  const auto names = wf.named_parameters().keys();
  for (size_t k = 0; k < params.size(); ++k) EXPECT_EQ(pass.fallback[k], names[k] == "alpha") << names[k];
  // The shared linear layer appears once per use, with its bias.
  int uses = 0;
  for (const auto& e : pass.linear) uses += e.weight >= 0 && e.bias >= 0;
  EXPECT_EQ(uses, 2);
}

TEST(RecordedPass, ModelsOutsideTheBlocksFallBackToTheVmapMethod) {
  const auto sys = lih();
  Hydrogenic h(sys, 1.3);
  const auto r = test::random_positions(sys, 6, 9);
  const auto ph = trainable_parameters(h);
  EXPECT_LT(rel_err(per_sample_log_gradients(h, test::tensors(sys), r, 6),
                    per_sample_log_gradients_vmap(h, test::tensors(sys), r, ph, 2)), 1e-12);
  torch::manual_seed(2);
  GaussianDeterminant g(sys, torch::randn({4, 3}, torch::kFloat64), 0.5 + torch::rand({4}, torch::kFloat64));
  const auto pg = trainable_parameters(g);
  EXPECT_LT(rel_err(per_sample_log_gradients(g, test::tensors(sys), r, 4),
                    per_sample_log_gradients_vmap(g, test::tensors(sys), r, pg, 6)), 1e-10);
}

TEST(RecordedPass, NoRecordingOutsideAPass) {
  // Without a recorder the blocks keep parameters in the graph: plain autograd sees them.
  const auto sys = lih();
  BlocksToy wf(static_cast<int64_t>(sys.atoms.size()));
  const auto r = test::random_positions(sys, 3, 2);
  const auto g = torch::autograd::grad({wf.forward(r, test::tensors(sys)).logabs.sum()}, {wf.pi, wf.lin->weight});
  EXPECT_GT(g[0].abs().sum().item<double>(), 0);
  EXPECT_GT(g[1].abs().sum().item<double>(), 0);
  EXPECT_EQ(per_sample::active(), nullptr);
}

namespace {
/// SPRING steps of small LiH FermiNets on 64 walkers, for the memory-budget tests.
struct BudgetedSteps {
  System sys = lih();
  torch::Tensor r = test::random_positions(sys, 64, 10);
  torch::Tensor e = torch::randn({64}, torch::kFloat64);
  SystemTensors tensors = test::tensors(sys);
  StageTimers timers;
  /// Peak working memory of one step of `wf` planned for `budget`.
  std::int64_t peak(WaveFunction& wf, const batching::MemoryBudget& budget = batching::MemoryBudget::unlimited()) {
    OptimOptions o;
    o.type = "spring";
    o.sr.chunk_walkers = 0;
    auto opt = make_optimizer(o, wf, budget);
    batching::PeakMemoryScope scope;
    EXPECT_TRUE(opt->step(wf, {WalkerBatch{&tensors, r, e}}, 0, timers));
    return scope.peak_bytes();
  }
};
}  // namespace

TEST(RecordedPass, NaturalGradientStaysWithinTheMemoryBudget) {
  // A budget below what the whole batch needs in one pass: the Jacobian is computed in walker
  // chunks, the step is the same as with no budget, and the peak stays within the budget.
  BudgetedSteps steps;
  FermiNet free(test::small_ferminet(), steps.sys), bounded(test::small_ferminet(), steps.sys);
  const std::int64_t whole = steps.peak(free);
  // What the optimizer keeps outside the chunks: the Jacobian, the kernel and its factor.
  const std::int64_t reserved = (64 * parameter_count(trainable_parameters(free)) + 3 * 64 * 64) * 8;
  ASSERT_GT(whole, reserved);
  const std::int64_t budget = reserved + (whole - reserved) / 2;
  EXPECT_LE(steps.peak(bounded, batching::MemoryBudget(budget)), budget);
  const auto a = trainable_parameters(free), b = trainable_parameters(bounded);
  for (size_t k = 0; k < a.size(); ++k) EXPECT_LT(rel_err(b[k], a[k]), 1e-10) << k;
}

// run.cuda_graphs keeps a captured local energy's working memory (the graph pool) for the
// whole run; the emulated graph keeps that account on the CPU. The local energy fits its chunk
// to its share of the budget, and the natural-gradient step plans its Jacobian chunks around
// the pool: pool + step stay within the budget (which the step alone would fill), and the
// step is the same as with no budget.
TEST(RecordedPass, NaturalGradientPlansAroundTheGraphPoolOfACapturedLocalEnergy) {
  BudgetedSteps steps;
  FermiNet free(test::small_ferminet(), steps.sys), bounded(test::small_ferminet(), steps.sys);
  const std::int64_t whole = steps.peak(free);
  const std::int64_t budget = whole * 3 / 2;  // the step alone fits in one pass (0.85 · budget > whole)
  ASSERT_EQ(batching::held_bytes(-1), 0);
  {
    HamiltonianOptions h;
    h.laplacian = "forward";
    ChunkPolicy p;
    p.budget = batching::MemoryBudget(budget);
    const auto f64 = torch::TensorOptions().dtype(torch::kFloat64);
    LocalEnergy le(steps.sys, make_laplacian(h, 0), f64, p);
    le.set_graph_mode(parallel::GraphMode::emulated);
    parallel::GraphKey key = {&bounded};
    for (const auto& q : trainable_parameters(bounded)) key.push_back(q.data_ptr());
    const auto eager = LocalEnergy(steps.sys, make_laplacian(h, 0), f64)(bounded, steps.r);
    for (int call = 0; call < 3; ++call)  // in chunks: equal to rounding
      EXPECT_LT(rel_err(le(bounded, steps.r, key).energy, eager.energy), 1e-12) << call;
    EXPECT_LT(le.chunk(), 64) << "its share of the budget must split the walkers for this test";
    const std::int64_t held = batching::held_bytes(-1);
    ASSERT_NE(le.graph(), nullptr);
    EXPECT_EQ(held, le.graph()->warmup_peak_bytes());
    EXPECT_GT(held, 0);
    EXPECT_LE(held, budget / 2);  // its share of the budget
    EXPECT_GT(whole + held, budget) << "without the account, step and pool would exceed the budget";
    const std::int64_t peak = steps.peak(bounded, batching::MemoryBudget(budget));
    EXPECT_LE(held + peak, budget) << "pool " << held << ", step " << peak << ", alone " << whole;
  }
  EXPECT_EQ(batching::held_bytes(-1), 0);  // the pool went with the graph
  const auto a = trainable_parameters(free), b = trainable_parameters(bounded);
  for (size_t k = 0; k < a.size(); ++k) EXPECT_LT(rel_err(b[k], a[k]), 1e-10) << k;
}

/// Peak memory of the per-sample gradients of all walkers r [B, N, 3] in one pass.
std::int64_t one_pass_peak(WaveFunction& wf, const SystemTensors& t, const torch::Tensor& r) {
  batching::PeakMemoryScope scope;
  (void)per_sample_log_gradients(wf, t, r, r.size(0));
  return scope.peak_bytes();
}

// The optimizers' chunk is fitted again when the device holds more memory than when it was
// fitted (a graph captured after the first step, whose measured pool exceeds its warm-up
// estimate), and kept when it holds less.
TEST(PerSampleGradients, ChunkIsFittedAgainWhenHeldMemoryGrows) {
  const auto sys = lih();
  FermiNet wf(test::small_ferminet(), sys);
  const auto r = test::random_positions(sys, 64, 4);
  const auto t = test::tensors(sys);
  const std::int64_t one_pass = one_pass_peak(wf, t, r);
  const batching::MemoryBudget budget(one_pass * 2);
  PerSampleChunk chunk;
  const std::int64_t free = chunk(wf, t, r, 0, budget, 0);
  EXPECT_EQ(free, 64);
  int pool = 0;
  batching::hold_memory(-1, &pool, one_pass);
  const std::int64_t around = chunk(wf, t, r, 0, budget, 0);
  EXPECT_LT(around, free);
  EXPECT_EQ(around, fit_per_sample_chunk(wf, t, r, 0, budget, 0));
  batching::release_memory(-1, &pool);
  EXPECT_EQ(chunk(wf, t, r, 0, budget, 0), around);  // less held: kept
}

// Walker parts each pay the pass's measured fixed memory, but what the step keeps outside the
// chunks (the Jacobian and the kernel) exists once: with R bytes reserved, two walker parts on
// two threads get the chunk of one part on one thread (the measured fixed memory is a few bytes
// here), not a chunk smaller by R / (bytes per walker).
TEST(PerSampleGradients, ReservedBytesAreChargedOnceNotOncePerWalkerPart) {
  const int previous = at::get_num_threads();
  parallel::set_walker_threads(true);
  const auto sys = lih();
  FermiNet wf(test::small_ferminet(), sys);
  const auto r = test::random_positions(sys, 64, 4);
  const auto t = test::tensors(sys);
  const std::int64_t one_pass = one_pass_peak(wf, t, r);
  const std::int64_t reserved = one_pass / 2;  // about 32 walkers' worth
  const batching::MemoryBudget budget(one_pass + reserved);
  at::set_num_threads(1);
  ASSERT_EQ(parallel::walker_parts(64, true), 1);
  const std::int64_t single = fit_per_sample_chunk(wf, t, r, 0, budget, reserved);
  at::set_num_threads(2);
  ASSERT_EQ(parallel::walker_parts(64, true), 2);
  const std::int64_t two = fit_per_sample_chunk(wf, t, r, 0, budget, reserved);
  at::set_num_threads(previous);
  EXPECT_LT(single, 64) << "the budget must split the walkers for this test";
  EXPECT_NEAR(static_cast<double>(two), static_cast<double>(single), 1.0);
}

// On two threads the walkers are split into two parts whose recorded passes run at once: the
// Jacobian is the one of one pass, for models in the building blocks, for parameters used
// outside them and for the vmap fallback.
TEST(PerSampleGradients, WalkerPartsOnTwoThreadsGiveTheJacobianOfOnePass) {
  const int previous = at::get_num_threads();
  at::set_num_threads(2);
  const auto sys = lih();
  const auto transformers = small_transformer_models();
  std::vector<std::shared_ptr<WaveFunction>> models{std::make_shared<FermiNet>(test::small_ferminet(), sys),
                                                    make_model(transformers[0], sys, torch::kFloat64, torch::kCPU),
                                                    make_model(transformers[1], sys, torch::kFloat64, torch::kCPU),
                                                    std::make_shared<Hydrogenic>(sys, 1.3),
                                                    std::make_shared<BlocksToy>(static_cast<int64_t>(sys.atoms.size()))};
  const auto r = test::random_positions(sys, 40, 4);  // parts of 20 walkers
  for (const auto& wf : models) {
    parallel::set_walker_threads(false);
    const auto one_pass = per_sample_log_gradients(*wf, test::tensors(sys), r, 40);
    parallel::set_walker_threads(true);
    for (std::int64_t chunk : {40, 6}) {
      const auto parts = per_sample_log_gradients(*wf, test::tensors(sys), r, chunk);
      EXPECT_LT(rel_err(parts, one_pass), 1e-12) << wf->type() << " chunk " << chunk;
    }
  }
  at::set_num_threads(previous);
}
