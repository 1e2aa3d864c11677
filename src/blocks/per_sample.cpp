/// @file per_sample.cpp
/// The thread-local parameter-use recorder of the autograd building blocks.
#include "blocks/per_sample.hpp"

#include "core/errors.hpp"

namespace nnvmc::per_sample {
namespace {
thread_local Recorder* g_active = nullptr;
}  // namespace

Recorder* active() { return g_active; }

Recorder::Recorder() : previous_(g_active) { g_active = this; }
Recorder::~Recorder() { g_active = previous_; }
Suspend::Suspend() : previous_(g_active) { g_active = nullptr; }
Suspend::~Suspend() { g_active = previous_; }

namespace {
/// y = x·Wᵀ + b with W and b detached, appended to `uses`. A first layer (input without a graph)
/// gives a y without a graph: it is made a leaf so the backward or the pull-back still reaches it.
torch::Tensor record_linear(std::vector<LinearUse>& uses, const torch::Tensor& x, const torch::Tensor& weight,
                            const torch::Tensor& bias) {
  auto y = torch::nn::functional::linear(x, weight.detach(), bias.defined() ? bias.detach() : bias);
  if (!y.requires_grad()) y.requires_grad_(true);
  uses.push_back({weight, bias, x.detach(), y});
  return y;
}
}  // namespace

torch::Tensor Recorder::linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  return record_linear(linear_, x, weight, bias);
}

torch::Tensor Recorder::shared_linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  return record_linear(shared_, x, weight, bias);
}

torch::Tensor Recorder::constant(const torch::Tensor& c, int64_t batch, int64_t dims) {
  const void* key = c.unsafeGetTensorImpl();
  auto it = constant_index_.find(key);
  if (it == constant_index_.end()) {
    std::vector<int64_t> shape{batch};
    shape.insert(shape.end(), c.sizes().begin(), c.sizes().end());
    auto delta = torch::zeros(shape, c.options().requires_grad(false));
    delta.requires_grad_(true);
    it = constant_index_.emplace(key, constants_.size()).first;
    constants_.push_back({c, delta});
  }
  const auto& use = constants_[it->second];
  if (use.delta.size(0) != batch)
    throw Error("per_sample::Recorder: one constant used with batches of " + std::to_string(use.delta.size(0)) +
                " and " + std::to_string(batch) + " walkers");
  // Leading size-1 axes of c beyond the broadcast rank carry no per-walker structure.
  std::vector<int64_t> shape(c.sizes().begin(), c.sizes().end());
  while (static_cast<int64_t>(shape.size()) > dims - 1 && !shape.empty() && shape.front() == 1)
    shape.erase(shape.begin());
  if (static_cast<int64_t>(shape.size()) > dims - 1)
    throw Error("per_sample::Recorder: a constant of " + std::to_string(c.dim()) +
                " axes broadcast against a tensor of " + std::to_string(dims) + " axes");
  std::vector<int64_t> view{batch};
  view.insert(view.end(), static_cast<size_t>(dims - 1 - static_cast<int64_t>(shape.size())), 1);
  view.insert(view.end(), shape.begin(), shape.end());
  return (c.detach() + use.delta).view(view);
}

}  // namespace nnvmc::per_sample
