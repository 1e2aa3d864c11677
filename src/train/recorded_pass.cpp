/// @file recorded_pass.cpp
/// Per-sample gradients from one recorded forward and one backward pass, with the vmapped
/// per-chunk method as the fallback for parameters used outside the building blocks.
#include "train/recorded_pass.hpp"

#include <unordered_map>

#include "blocks/per_sample.hpp"
#include "core/errors.hpp"
#include "core/host_parallel.hpp"
#include "train/batched_vjp.hpp"
#include "train/outer_sum_tensors.hpp"

namespace nnvmc {
namespace {

std::vector<std::int64_t> column_offsets(const std::vector<torch::Tensor>& params) {
  std::vector<std::int64_t> off{0};
  for (const auto& p : params) off.push_back(off.back() + p.numel());
  return off;
}

/// view[b] (+)= g[b]ᵀ x[b]. On the CPU in float64 with few positions: outer_sum's loops over
/// the walkers' threads; otherwise one batched GEMM straight into the view (on CUDA a single
/// strided-batched cuBLAS call; on the CPU ATen's loop of per-walker GEMMs).
/// @param view [B, out, in], rows contiguous @param g [B, S, out] @param x [B, S, in] (batch
/// stride 0 for a shared input)
void add_outer_sum(torch::Tensor view, const torch::Tensor& g, const torch::Tensor& x, bool accumulate) {
  const auto f64 = torch::kFloat64;
  if (view.device().is_cpu() && view.scalar_type() == f64 && g.scalar_type() == f64 && x.scalar_type() == f64 &&
      g.size(1) <= outer_sum::kMaxPositions && view.stride(2) == 1) {
    const auto gc = g.stride(2) == 1 ? g : g.contiguous();
    const auto xc = x.stride(2) == 1 ? x : x.contiguous();
    const auto a = outer_sum::tensor_args(gc, xc, view, accumulate);
    at::parallel_for(0, view.size(0), 8, [&](std::int64_t b0, std::int64_t b1) { outer_sum::run(a, b0, b1); });
    return;
  }
  const auto gt = g.transpose(1, 2);
  if (view.scalar_type() == x.scalar_type()) {
    if (accumulate) view.baddbmm_(gt, x);
    else torch::bmm_out(view, gt, x);
  } else {
    const auto v = torch::bmm(gt, x);
    if (accumulate) view.add_(v);
    else view.copy_(v);
  }
}

/// Adds (or, when `written` is false, writes) parameter k's per-sample gradient from the
/// recorded pass into target [B, numel_k]; sets `written` when anything was written.
void accumulate(const RecordedPass& pass, int k, torch::Tensor target, bool& written) {
  const std::int64_t b = pass.batch;
  for (const auto& e : pass.linear) {
    if (e.weight == k) {
      add_outer_sum(target.view({b, e.g.size(2), e.x.size(2)}), e.g, e.x, written);  // strides (P, in, 1)
      written = true;
    }
    if (e.bias == k) {
      const auto v = e.g.sum(1);
      if (written) target.add_(v);
      else target.copy_(v);
      written = true;
    }
  }
  if (pass.dense[k].defined()) {
    if (written) target.add_(pass.dense[k]);
    else target.copy_(pass.dense[k]);
    written = true;
  }
}

}  // namespace

torch::Tensor per_sample_log_gradients_vmap(WaveFunction& wf, const SystemTensors& sys, const torch::Tensor& r,
                                            const std::vector<torch::Tensor>& params, std::int64_t chunk) {
  if (chunk <= 0) throw InputError("per_sample_log_gradients: chunk must be > 0");
  per_sample::Suspend plain;  // the full graph of every parameter use
  torch::AutoGradMode grad_mode(true);
  const std::int64_t b = r.size(0);
  const auto opts = torch::TensorOptions().dtype(torch::kFloat64).device(r.device());
  std::vector<torch::Tensor> rows;
  for (std::int64_t s = 0; s < b; s += chunk) {
    const auto rc = r.slice(0, s, std::min(b, s + chunk)).detach();
    const auto logabs = wf.forward(rc, sys).logabs;
    const std::int64_t c = logabs.size(0);
    std::vector<torch::Tensor> cols;
    cols.reserve(params.size());
    std::vector<torch::Tensor> g(params.size());
    if (logabs.requires_grad()) g = batched_vjp({logabs}, params, {torch::eye(c, logabs.options())}, false);
    for (size_t k = 0; k < params.size(); ++k)
      cols.push_back(g[k].defined() ? g[k].reshape({c, -1}).to(torch::kFloat64)
                                    : torch::zeros({c, params[k].numel()}, opts));
    rows.push_back(cols.empty() ? torch::zeros({c, 0}, opts) : torch::cat(cols, 1));
  }
  return torch::cat(rows, 0);
}

RecordedPass record_pass(WaveFunction& wf, const SystemTensors& sys, const torch::Tensor& r,
                         const std::vector<torch::Tensor>& params, std::int64_t fallback_chunk) {
  torch::AutoGradMode grad_mode(true);
  const std::int64_t b = r.size(0);
  RecordedPass pass;
  pass.batch = b;
  pass.dense.resize(params.size());
  pass.fallback.assign(params.size(), false);
  std::unordered_map<const void*, int> index;
  for (size_t k = 0; k < params.size(); ++k) index[params[k].unsafeGetTensorImpl()] = static_cast<int>(k);
  const auto param_index = [&](const torch::Tensor& t) {
    const auto it = index.find(t.unsafeGetTensorImpl());
    return it == index.end() ? -1 : it->second;
  };

  std::vector<per_sample::LinearUse> linear;
  std::vector<per_sample::ConstantUse> constants;
  std::vector<per_sample::LinearUse> shared;
  torch::Tensor logabs;
  {
    per_sample::Recorder recorder;
    logabs = wf.forward(r.detach(), sys).logabs;
    linear = recorder.linear_uses();
    constants = recorder.constant_uses();
    shared = recorder.shared_linear_uses();
  }
  if (!logabs.requires_grad()) return pass;  // no parameter reaches log|ψ|: all gradients zero

  std::vector<torch::Tensor> inputs;
  for (const auto& u : linear) inputs.push_back(u.y);
  for (const auto& c : constants) inputs.push_back(c.delta);
  inputs.insert(inputs.end(), params.begin(), params.end());
  for (const auto& u : shared) inputs.push_back(u.y);
  const auto grads = torch::autograd::grad({logabs.sum()}, inputs, {}, /*retain_graph=*/false,
                                           /*create_graph=*/false, /*allow_unused=*/true);
  // A parameter that still gets a gradient is used outside the recorded building blocks. So is
  // a shared map whose output does: walker-independent tensors reach log|ψ| only through the
  // blocks (which detach them), so a gradient here means plain tensor code used y.
  const size_t first_param = linear.size() + constants.size(), first_shared = first_param + params.size();
  for (size_t k = 0; k < params.size(); ++k) pass.fallback[k] = grads[first_param + k].defined();
  std::unordered_map<const void*, int> shared_y;  // TensorImpl* of a shared use's y → its index
  for (size_t j = 0; j < shared.size(); ++j) {
    shared_y.emplace(shared[j].y.unsafeGetTensorImpl(), static_cast<int>(j));
    if (!grads[first_shared + j].defined()) continue;
    if (const int k = param_index(shared[j].weight); k >= 0) pass.fallback[k] = true;
    if (shared[j].bias.defined())
      if (const int k = param_index(shared[j].bias); k >= 0) pass.fallback[k] = true;
  }

  const auto add_dense = [&](int k, const torch::Tensor& g) {
    const auto flat = g.reshape({b, -1}).to(torch::kFloat64);
    pass.dense[k] = pass.dense[k].defined() ? pass.dense[k] + flat : flat;
  };
  // A tensor computed from parameters (not itself one): its per-sample gradients are pulled
  // back through its graph, which does not depend on the walkers. All such tensors go back in
  // one batched backward at the end (they often share a graph, e.g. a hypernetwork's).
  std::vector<torch::Tensor> chained, chained_grads;
  std::unordered_map<const void*, size_t> chained_index;
  const auto chain = [&](const torch::Tensor& c, const torch::Tensor& per_sample_grad) {
    // A leaf that requires grad but is not a trainable parameter has nothing behind it; a shared
    // use's output is a leaf when its input had no graph, and is pulled back like the rest.
    if (c.is_leaf() && shared_y.count(c.unsafeGetTensorImpl()) == 0) return;
    const auto [it, fresh] = chained_index.emplace(c.unsafeGetTensorImpl(), chained.size());
    if (fresh) {
      chained.push_back(c);
      chained_grads.push_back(per_sample_grad);
    } else {
      chained_grads[it->second] = chained_grads[it->second] + per_sample_grad;
    }
  };
  for (size_t i = 0; i < linear.size(); ++i) {
    const auto& g = grads[i];
    if (!g.defined()) continue;  // output does not reach log|ψ|
    const auto& u = linear[i];
    RecordedPass::Linear e;
    e.x = u.x.reshape({b, -1, u.x.size(-1)});
    e.g = g.reshape({b, -1, g.size(-1)});
    if (u.weight.requires_grad()) {
      const int k = param_index(u.weight);
      if (k >= 0) e.weight = k;
      else chain(u.weight, torch::bmm(e.g.transpose(1, 2), e.x));
    }
    if (u.bias.defined() && u.bias.requires_grad()) {
      const int k = param_index(u.bias);
      if (k >= 0) e.bias = k;
      else chain(u.bias, e.g.sum(1));
    }
    if (e.weight >= 0 || e.bias >= 0) pass.linear.push_back(std::move(e));
  }
  for (size_t j = 0; j < constants.size(); ++j) {
    const auto& g = grads[linear.size() + j];
    if (!g.defined()) continue;
    const int k = param_index(constants[j].constant);
    if (k >= 0) add_dense(k, g);
    else chain(constants[j].constant, g);
  }

  // The molecule-level linear maps (per_sample::shared_linear) were run with detached
  // parameters: the pull-back stops at their outputs y, and their weight gradients are the
  // per-sample contractions ∂W[b] = Σ_s ∂y[b, s]ᵀ x[s], written like the walkers' own.
  if (!chained.empty()) {
    std::vector<torch::Tensor> inputs = params;
    for (const auto& u : shared) inputs.push_back(u.y);
    const auto g = batched_vjp(chained, inputs, chained_grads, /*retain_graph=*/false);
    for (size_t k = 0; k < params.size(); ++k)
      if (g[k].defined()) add_dense(static_cast<int>(k), g[k]);
    for (size_t j = 0; j < shared.size(); ++j) {
      const auto& gy = g[params.size() + j];
      if (!gy.defined()) continue;  // y does not reach log|ψ|
      const auto& u = shared[j];
      RecordedPass::Linear e;
      e.shared = true;
      e.g = gy.reshape({b, -1, gy.size(-1)});
      e.x = u.x.reshape({1, -1, u.x.size(-1)}).expand({b, e.g.size(1), u.x.size(-1)});
      e.weight = param_index(u.weight);
      if (u.bias.defined() && u.bias.requires_grad()) e.bias = param_index(u.bias);
      if (e.weight >= 0 || e.bias >= 0) pass.linear.push_back(std::move(e));
    }
  }

  std::vector<torch::Tensor> leftover;
  std::vector<int> leftover_index;
  for (size_t k = 0; k < params.size(); ++k)
    if (pass.fallback[k]) {
      leftover.push_back(params[k]);
      leftover_index.push_back(static_cast<int>(k));
    }
  if (!leftover.empty()) {
    const auto jac = per_sample_log_gradients_vmap(wf, sys, r, leftover, fallback_chunk);
    std::int64_t col = 0;
    for (int k : leftover_index) {
      pass.dense[k] = jac.slice(1, col, col + params[k].numel());
      col += params[k].numel();
    }
    std::vector<RecordedPass::Linear> kept;
    for (auto& e : pass.linear) {
      if (e.weight >= 0 && pass.fallback[e.weight]) e.weight = -1;
      if (e.bias >= 0 && pass.fallback[e.bias]) e.bias = -1;
      if (e.weight >= 0 || e.bias >= 0) kept.push_back(std::move(e));
    }
    pass.linear = std::move(kept);
  }
  return pass;
}

void write_jacobian(const RecordedPass& pass, const std::vector<torch::Tensor>& params, torch::Tensor out) {
  const auto off = column_offsets(params);
  if (out.dim() != 2 || out.size(0) != pass.batch || out.size(1) != off.back())
    throw Error("write_jacobian: output is not [B, P]");
  for (size_t k = 0; k < params.size(); ++k) {
    auto target = out.slice(1, off[k], off[k + 1]);
    bool written = false;
    accumulate(pass, static_cast<int>(k), target, written);
    if (!written) target.zero_();
  }
}

torch::Tensor per_sample_gradient(const RecordedPass& pass, const std::vector<torch::Tensor>& params, int k) {
  auto out = torch::empty({pass.batch, params[k].numel()},
                          torch::TensorOptions().dtype(torch::kFloat64).device(params[k].device()));
  bool written = false;
  accumulate(pass, k, out, written);
  if (!written) out.zero_();
  return out;
}

}  // namespace nnvmc
