#include <torch/csrc/autograd/forward_grad.h>

#include "hamiltonian/laplacian_methods.hpp"

namespace nnvmc {
namespace {

/// A forward-AD level for the lifetime of the object.
struct DualLevel {
  std::uint64_t idx = torch::autograd::ForwardADLevel::get_next_idx();
  ~DualLevel() { torch::autograd::ForwardADLevel::release_idx(idx); }
};

/// Forward-over-reverse. The 3N tangents e_k are carried at once: walkers are replicated
/// 3N times ([3N·B, 3N]) and copy k carries tangent e_k through the forward pass and the
/// differentiable backward pass that yields ∇log|ψ|; the tangent of that gradient in copy k
/// is column k of the Hessian. One wide pass instead of 3N narrow ones (far fewer, larger
/// kernels); memory grows 3N-fold, which the walker chunking of LocalEnergy absorbs.
class JvpLaplacian final : public LaplacianMethod {
 public:
  KineticTerms compute(WaveFunction& wf, const SystemTensors& sys, const torch::Tensor& r) override {
    const int64_t b = r.size(0), n = r.size(1), d = 3 * n;
    DualLevel level;
    const auto lvl = static_cast<int64_t>(level.idx);
    auto x = r.detach().reshape({1, b, d}).expand({d, b, d}).reshape({d * b, d}).clone();
    x.requires_grad_(true);
    const auto eye = torch::eye(d, r.options().requires_grad(false));
    const auto tangent = eye.unsqueeze(1).expand({d, b, d}).reshape({d * b, d});
    const auto xd = at::_make_dual(x, tangent, lvl);
    const auto logabs = wf.forward(xd.view({d * b, n, 3}), sys).logabs;
    const auto g = torch::autograd::grad({logabs.sum()}, {x}, {}, false, /*create_graph=*/true)[0];
    const auto [primal, hess] = at::_unpack_dual(g, lvl);  // [3N·B, 3N] each
    if (!hess.defined()) throw std::logic_error("forward AD did not reach the gradient");
    const auto h = hess.detach().view({d, b, d});
    const auto lap = torch::diagonal(h, 0, 0, 2).sum(-1);  // Σ_k H[k, b, k] → [B]
    const auto grad_sq = primal.detach().view({d, b, d}).select(0, 0).square().sum(1);
    return {lap, grad_sq};
  }
  bool exact() const override { return true; }
};

}  // namespace

std::unique_ptr<LaplacianMethod> make_jvp_laplacian() { return std::make_unique<JvpLaplacian>(); }

}  // namespace nnvmc
