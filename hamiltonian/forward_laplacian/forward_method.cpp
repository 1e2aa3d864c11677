#include "hamiltonian/forward_laplacian/forward_method.hpp"

namespace nnvmc {
namespace {

/// Runs the ansatz's own Blocks<FwdLap> program (WaveFunction::forward_laplacian): the
/// Hamiltonian knows no model by name.
class ForwardLaplacian final : public LaplacianMethod {
 public:
  KineticTerms compute(WaveFunction& wf, const SystemTensors& sys, const torch::Tensor& r,
                       std::int64_t /*first_walker*/) override {
    torch::NoGradGuard no_grad;
    const auto out = wf.forward_laplacian(Blocks<FwdLap>::positions(r.detach()), sys).logabs;
    return {out.lap, out.jac.square().sum(1)};
  }
  bool exact() const override { return true; }
};

}  // namespace

std::unique_ptr<LaplacianMethod> make_forward_laplacian() {
  return std::make_unique<ForwardLaplacian>();
}

}  // namespace nnvmc
