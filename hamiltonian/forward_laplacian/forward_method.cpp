#include "hamiltonian/forward_laplacian/forward_method.hpp"

#include "core/errors.hpp"
#include "hamiltonian/forward_laplacian/programs.hpp"

namespace nnvmc {
namespace {

class ForwardLaplacian final : public LaplacianMethod {
 public:
  KineticTerms compute(WaveFunction& wf, const torch::Tensor& r) override {
    const auto& programs = forward_laplacian_programs();
    const auto it = programs.find(wf.type());
    if (it == programs.end()) {
      std::string known;
      for (const auto& [name, _] : programs) known += (known.empty() ? "" : ", ") + name;
      throw ConfigError("'hamiltonian.laplacian': method 'forward' does not support ansatz '" +
                        wf.type() + "' (supported: " + known + "); use jvp or reverse");
    }
    torch::NoGradGuard no_grad;
    const auto out = it->second(wf, Blocks<FwdLap>::positions(r.detach())).logabs;
    return {out.lap, out.jac.square().sum(1)};
  }
  bool exact() const override { return true; }
};

}  // namespace

std::unique_ptr<LaplacianMethod> make_forward_laplacian() {
  return std::make_unique<ForwardLaplacian>();
}

}  // namespace nnvmc
