#include <torch/csrc/autograd/forward_grad.h>

#include "hamiltonian/laplacian_methods.hpp"

namespace nnvmc {
namespace {

/// A forward-AD level for the lifetime of the object.
struct DualLevel {
  std::uint64_t idx = torch::autograd::ForwardADLevel::get_next_idx();
  ~DualLevel() { torch::autograd::ForwardADLevel::release_idx(idx); }
};

/// Forward-over-reverse: for each coordinate k the tangent e_k is carried (forward mode)
/// through the forward pass and through the differentiable backward pass that yields
/// ∇log|ψ|; the tangent of the gradient is column k of the Hessian.
class JvpLaplacian final : public LaplacianMethod {
 public:
  KineticTerms compute(WaveFunction& wf, const torch::Tensor& r) override {
    const int64_t b = r.size(0), n = r.size(1), dims = 3 * n;
    auto lap = torch::zeros({b}, r.options().requires_grad(false));
    torch::Tensor grad_sq;
    for (int64_t k = 0; k < dims; ++k) {
      DualLevel level;
      auto x = r.detach().reshape({b, dims}).clone().requires_grad_(true);
      auto tangent = torch::zeros_like(x).requires_grad_(false);
      tangent.select(1, k).fill_(1.0);
      const auto xd = at::_make_dual(x, tangent, static_cast<int64_t>(level.idx));
      const auto logabs = wf.forward(xd.view({b, n, 3})).logabs;
      const auto g = torch::autograd::grad({logabs.sum()}, {x}, {}, false, /*create_graph=*/true)[0];
      const auto [primal, hk] = at::_unpack_dual(g, static_cast<int64_t>(level.idx));
      if (!hk.defined()) throw std::logic_error("forward AD did not reach the gradient");
      lap += hk.select(1, k).detach();
      if (k == 0) grad_sq = primal.detach().square().sum(1);
    }
    return {lap, grad_sq};
  }
  bool exact() const override { return true; }
};

}  // namespace

std::unique_ptr<LaplacianMethod> make_jvp_laplacian() { return std::make_unique<JvpLaplacian>(); }

}  // namespace nnvmc
