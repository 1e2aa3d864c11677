#include <gtest/gtest.h>

#include "common/test_util.hpp"
#include "core/system.hpp"
#include "models/ferminet/ferminet.hpp"
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
