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
  /// @param first_walker global index of r's first row: a stochastic method draws each walker's
  /// numbers from the walker's own counter-based stream (keyed by this index and the draw that
  /// begin_evaluation() started), so they do not depend on walker parts or ranks; exact methods
  /// ignore it. When thread_safe(), callable from several threads at once on different rows
  /// (LocalEnergy's walker parts): the method keeps no state per call.
  virtual KineticTerms compute(WaveFunction& wf, const SystemTensors& sys, const torch::Tensor& r,
                               std::int64_t first_walker) = 0;
  /// compute(wf, sys, r, 0): r's rows are walkers 0..B−1.
  KineticTerms compute(WaveFunction& wf, const SystemTensors& sys, const torch::Tensor& r) {
    return compute(wf, sys, r, 0);
  }
  /// True when the result is exact (not a stochastic estimate).
  virtual bool exact() const = 0;
  /// True when compute() may run on several threads at once (on different walkers).
  virtual bool thread_safe() const { return true; }
  /// True when a captured device graph may replay compute() (LocalEnergy's graph): it draws no
  /// random numbers (a replay would repeat them) and holds no process-wide state (jvp's
  /// forward-AD levels). Exact, thread-safe methods: forward and reverse.
  virtual bool capturable() const { return exact() && thread_safe(); }
  /// RNG state of a stochastic method (undefined tensor for exact ones), for checkpoints.
  virtual torch::Tensor rng_state() const { return {}; }
  virtual void set_rng_state(const torch::Tensor& /*state*/) {}
  /// Starts a new draw of a stochastic method's numbers for one local-energy evaluation of all
  /// walkers (the compute() calls until the next begin_evaluation()). Exact methods ignore it.
  virtual void begin_evaluation() {}
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
