#include "hamiltonian/laplacian_methods.hpp"

namespace nnvmc {
namespace {

class ReverseLaplacian final : public LaplacianMethod {
 public:
  KineticTerms compute(WaveFunction& wf, const SystemTensors& sys, const torch::Tensor& r,
                       std::int64_t /*first_walker*/) override {
    auto [x, g] = gradient_with_graph(wf, sys, r);
    const int64_t dims = x.size(1);
    auto lap = torch::zeros({x.size(0)}, x.options().requires_grad(false));
    for (int64_t k = 0; k < dims; ++k) {
      const auto hk = torch::autograd::grad({g.select(1, k).sum()}, {x}, {},
                                            /*retain_graph=*/k + 1 < dims)[0];
      lap += hk.select(1, k).detach();
    }
    return {lap, g.detach().square().sum(1)};
  }
  bool exact() const override { return true; }
};

}  // namespace

std::unique_ptr<LaplacianMethod> make_reverse_laplacian() {
  return std::make_unique<ReverseLaplacian>();
}

}  // namespace nnvmc
