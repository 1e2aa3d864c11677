#include <ATen/CPUGeneratorImpl.h>

#include "hamiltonian/laplacian_methods.hpp"

namespace nnvmc {
namespace {

class HutchinsonLaplacian final : public LaplacianMethod {
 public:
  HutchinsonLaplacian(const HutchinsonOptions& o, std::uint64_t seed)
      : options_(o), gen_(at::make_generator<at::CPUGeneratorImpl>(seed)) {}

  KineticTerms compute(WaveFunction& wf, const SystemTensors& sys, const torch::Tensor& r) override {
    auto [x, g] = gradient_with_graph(wf, sys, r);
    const auto cpu64 = torch::TensorOptions().dtype(torch::kFloat64);
    auto lap = torch::zeros({x.size(0)}, x.options().requires_grad(false));
    for (int p = 0; p < options_.probes; ++p) {
      torch::Tensor v;  // fresh probe per walker and evaluation
      if (options_.distribution == "gaussian") {
        v = at::normal(0.0, 1.0, x.sizes(), gen_, cpu64);
      } else {
        v = at::empty(x.sizes(), cpu64).bernoulli_(0.5, gen_) * 2 - 1;
      }
      v = v.to(x.options().requires_grad(false));
      const auto hv = torch::autograd::grad({(g * v).sum()}, {x}, {},
                                            /*retain_graph=*/p + 1 < options_.probes)[0];
      lap += (hv.detach() * v).sum(1);
    }
    return {lap / options_.probes, g.detach().square().sum(1)};
  }
  bool exact() const override { return false; }
  torch::Tensor rng_state() const override { return gen_.get_state(); }
  void set_rng_state(const torch::Tensor& state) override {
    if (state.defined()) gen_.set_state(state);
  }

 private:
  HutchinsonOptions options_;
  torch::Generator gen_;
};

}  // namespace

std::unique_ptr<LaplacianMethod> make_hutchinson_laplacian(const HutchinsonOptions& options,
                                                           std::uint64_t seed) {
  return std::make_unique<HutchinsonLaplacian>(options, seed);
}

}  // namespace nnvmc
