#pragma once
/// @file laplacian.hpp
/// Kinetic-energy terms of log|ψ|: one interface, several methods (config
/// `hamiltonian.laplacian`), chosen through a registry.
#include <torch/torch.h>

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "core/config.hpp"
#include "models/wavefunction.hpp"

namespace nnvmc {

/// ∇²log|ψ| and |∇log|ψ||² per walker (both [B]); detached from any graph.
struct KineticTerms {
  torch::Tensor laplacian;  ///< [B] Σ_k ∂²log|ψ|/∂x_k²
  torch::Tensor grad_sq;    ///< [B] Σ_k (∂log|ψ|/∂x_k)²
};

/// A way of computing KineticTerms. Implementations must not modify the wavefunction.
class LaplacianMethod {
 public:
  virtual ~LaplacianMethod() = default;
  /// @param sys the molecule @param r [B, N, 3] (no grad required; the method makes its own leaf)
  virtual KineticTerms compute(WaveFunction& wf, const SystemTensors& sys, const torch::Tensor& r) = 0;
  /// True when the result is exact (not a stochastic estimate).
  virtual bool exact() const = 0;
  /// RNG state of a stochastic method (undefined tensor for exact ones), for checkpoints.
  virtual torch::Tensor rng_state() const { return {}; }
  virtual void set_rng_state(const torch::Tensor& /*state*/) {}
  /// A stochastic method draws its numbers per walker (counter-based streams keyed by the
  /// global walker index), so they do not depend on walker chunks or ranks: begin_evaluation()
  /// starts a new draw for one local-energy evaluation of all walkers, set_first_walker()
  /// gives the global index of the first row of the next compute() calls. Exact methods ignore both.
  virtual void begin_evaluation() {}
  virtual void set_first_walker(std::int64_t /*first*/) {}
};

/// Factory of Laplacian methods by name; `seed` seeds stochastic methods.
using LaplacianFactory =
    std::function<std::unique_ptr<LaplacianMethod>(const HamiltonianOptions&, std::uint64_t seed)>;

/// The registry of methods: forward, jvp, reverse, hutchinson.
const std::map<std::string, LaplacianFactory>& laplacian_methods();

/// Builds the method named by options.laplacian. @throws ConfigError for unknown names.
std::unique_ptr<LaplacianMethod> make_laplacian(const HamiltonianOptions& options,
                                                std::uint64_t seed);

/// Gradient of log|ψ| with a graph for second derivatives.
/// @return {x [B, 3N] leaf requiring grad, g [B, 3N] = ∂log|ψ|/∂x with create_graph}
std::pair<torch::Tensor, torch::Tensor> gradient_with_graph(WaveFunction& wf, const SystemTensors& sys,
                                                            const torch::Tensor& r);

}  // namespace nnvmc
