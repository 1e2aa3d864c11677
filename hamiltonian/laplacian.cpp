#include "hamiltonian/laplacian.hpp"

#include "core/errors.hpp"
#include "hamiltonian/forward_laplacian/forward_method.hpp"
#include "hamiltonian/laplacian_methods.hpp"

namespace nnvmc {

std::pair<torch::Tensor, torch::Tensor> gradient_with_graph(WaveFunction& wf, const SystemTensors& sys,
                                                            const torch::Tensor& r) {
  const int64_t b = r.size(0), n = r.size(1);
  auto x = r.detach().reshape({b, 3 * n}).clone().requires_grad_(true);
  const auto logabs = wf.forward(x.view({b, n, 3}), sys).logabs;
  auto g = torch::autograd::grad({logabs.sum()}, {x}, {}, /*retain_graph=*/true,
                                 /*create_graph=*/true)[0];
  return {x, g};
}

const std::map<std::string, LaplacianFactory>& laplacian_methods() {
  static const std::map<std::string, LaplacianFactory> methods = {
      {"reverse", [](const HamiltonianOptions&, std::uint64_t) { return make_reverse_laplacian(); }},
      {"jvp", [](const HamiltonianOptions&, std::uint64_t) { return make_jvp_laplacian(); }},
      {"forward", [](const HamiltonianOptions&, std::uint64_t) { return make_forward_laplacian(); }},
      {"hutchinson",
       [](const HamiltonianOptions& o, std::uint64_t seed) {
         return make_hutchinson_laplacian(o.hutchinson, seed);
       }},
  };
  return methods;
}

std::unique_ptr<LaplacianMethod> make_laplacian(const HamiltonianOptions& options,
                                                std::uint64_t seed) {
  const auto& methods = laplacian_methods();
  const auto it = methods.find(options.laplacian);
  if (it == methods.end())
    throw ConfigError("'hamiltonian.laplacian': unknown method '" + options.laplacian + "'");
  return it->second(options, seed);
}

}  // namespace nnvmc
