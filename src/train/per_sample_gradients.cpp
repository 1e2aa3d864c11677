#include "train/per_sample_gradients.hpp"

#include <ATen/LegacyVmapMode.h>

#include "core/errors.hpp"

namespace nnvmc {

std::vector<torch::Tensor> trainable_parameters(WaveFunction& wf) {
  std::vector<torch::Tensor> out;
  for (const auto& p : wf.named_parameters())
    if (p.value().requires_grad()) out.push_back(p.value());
  return out;
}

std::int64_t parameter_count(const std::vector<torch::Tensor>& params) {
  std::int64_t n = 0;
  for (const auto& p : params) n += p.numel();
  return n;
}

namespace {

/// Vector–Jacobian products of `out` [c] with the c rows of the identity, in one backward
/// pass: the cotangent carries a leading vmap batch dimension (ATen's batched-tensor mode).
/// @return [c, P] float64
torch::Tensor jacobian_rows(const torch::Tensor& out, const std::vector<torch::Tensor>& params) {
  const std::int64_t c = out.size(0);
  const auto eye = torch::eye(c, out.options());
  std::vector<torch::Tensor> grads;
  {
    const int64_t level = at::impl::VmapMode::increment_nesting();
    struct Pop {
      ~Pop() { at::impl::VmapMode::decrement_nesting(); }
    } pop;
    const auto cotangent = at::_add_batch_dim(eye, 0, level);
    const auto g = torch::autograd::grad({out}, params, {cotangent}, /*retain_graph=*/false,
                                         /*create_graph=*/false, /*allow_unused=*/true);
    grads.reserve(g.size());
    for (const auto& t : g)
      grads.push_back(t.defined() ? at::_remove_batch_dim(t, level, c, 0) : torch::Tensor());
  }
  std::vector<torch::Tensor> cols;
  cols.reserve(params.size());
  for (size_t k = 0; k < params.size(); ++k) {
    const auto opts = torch::TensorOptions().dtype(torch::kFloat64).device(out.device());
    cols.push_back(grads[k].defined() ? grads[k].reshape({c, -1}).to(torch::kFloat64)
                                      : torch::zeros({c, params[k].numel()}, opts));
  }
  return torch::cat(cols, 1);
}

}  // namespace

torch::Tensor per_sample_log_gradients(WaveFunction& wf, const SystemTensors& sys, const torch::Tensor& r,
                                       std::int64_t chunk) {
  if (chunk <= 0) throw InputError("per_sample_log_gradients: chunk must be > 0");
  const auto params = trainable_parameters(wf);
  const std::int64_t b = r.size(0);
  std::vector<torch::Tensor> rows;
  for (std::int64_t s = 0; s < b; s += chunk) {
    const auto rc = r.slice(0, s, std::min(b, s + chunk)).detach();
    const auto logabs = wf.forward(rc, sys).logabs;
    rows.push_back(jacobian_rows(logabs, params));
  }
  return torch::cat(rows, 0);
}

void add_to_parameters(const std::vector<torch::Tensor>& params, const torch::Tensor& delta,
                       double alpha) {
  torch::NoGradGuard no_grad;
  std::int64_t offset = 0;
  for (const auto& p : params) {
    const auto n = p.numel();
    const auto d = delta.slice(0, offset, offset + n).reshape(p.sizes()).to(p.options());
    const_cast<torch::Tensor&>(p).add_(d, alpha);
    offset += n;
  }
  if (offset != delta.numel())
    throw NumericalError("add_to_parameters: update has " + std::to_string(delta.numel()) +
                         " entries, the model has " + std::to_string(offset));
}

}  // namespace nnvmc
