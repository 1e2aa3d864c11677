#include "hamiltonian/laplacian_methods.hpp"
#include "parallel/walker_random.hpp"

namespace nnvmc {
namespace {

class HutchinsonLaplacian final : public LaplacianMethod {
 public:
  HutchinsonLaplacian(const HutchinsonOptions& o, std::uint64_t seed) : options_(o), seed_(seed) {}

  KineticTerms compute(WaveFunction& wf, const SystemTensors& sys, const torch::Tensor& r,
                       std::int64_t first_walker) override {
    auto [x, g] = gradient_with_graph(wf, sys, r);
    const int64_t b = x.size(0), n = x.size(1);
    // Fresh probes per walker and evaluation, from each walker's own stream: [B, probes, 3N].
    const auto ids = torch::arange(first_walker, first_walker + b, x.options().dtype(torch::kInt64).requires_grad(false));
    torch::Tensor probes;
    if (options_.distribution == "gaussian") {
      probes = parallel::walker_normal(seed_, parallel::RandomPurpose::probe, draw_, ids, options_.probes * n);
    } else {
      const auto u = parallel::walker_uniform(seed_, parallel::RandomPurpose::probe, draw_, ids, options_.probes * n);
      probes = torch::where(u < 0.5, -1.0, 1.0);
    }
    probes = probes.view({b, options_.probes, n}).to(x.options().requires_grad(false));
    auto lap = torch::zeros({b}, x.options().requires_grad(false));
    for (int p = 0; p < options_.probes; ++p) {
      const auto v = probes.select(1, p);
      const auto hv = torch::autograd::grad({(g * v).sum()}, {x}, {},
                                            /*retain_graph=*/p + 1 < options_.probes)[0];
      lap += (hv.detach() * v).sum(1);
    }
    return {lap / options_.probes, g.detach().square().sum(1)};
  }
  bool exact() const override { return false; }
  torch::Tensor rng_state() const override { return parallel::counter_state(seed_, draw_); }
  void set_rng_state(const torch::Tensor& state) override {
    // A generator state of an older nnvmc is not a counter: the draws continue from here.
    if (state.defined()) parallel::read_counter_state(state, seed_, draw_);
  }
  void begin_evaluation() override { ++draw_; }

 private:
  HutchinsonOptions options_;
  std::uint64_t seed_;
  std::uint64_t draw_ = 0;   ///< the walker streams' counter (one draw per evaluation)
};

}  // namespace

std::unique_ptr<LaplacianMethod> make_hutchinson_laplacian(const HutchinsonOptions& options,
                                                           std::uint64_t seed) {
  return std::make_unique<HutchinsonLaplacian>(options, seed);
}

}  // namespace nnvmc
