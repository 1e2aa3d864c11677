#pragma once
/// @file metropolis.hpp
/// Metropolis–Hastings sampling of |ψ|² with all-electron Gaussian moves.
#include <torch/torch.h>

#include <functional>

#include "core/config.hpp"
#include "core/system.hpp"
#include "parallel/communicator.hpp"

namespace nnvmc {

/// log|ψ| of a batch: r [B, N, 3] → [B]. Evaluated without gradients by the sampler.
using LogAbsFn = std::function<torch::Tensor(const torch::Tensor&)>;

/// Everything needed to continue the same Markov chain (all of it is checkpointed).
struct SamplerState {
  torch::Tensor r;          ///< [B, N, 3] positions (bohr)
  torch::Tensor logabs;     ///< [B] log|ψ(r)|
  double step_size = 0.02;  ///< Gaussian move width (bohr)
  torch::Tensor rng_state;  ///< uint8 state of the sampler's CPU generator
};

/// Metropolis–Hastings walkers. Random numbers come from one CPU generator (seeded), so a
/// chain is reproducible and can be resumed exactly from a SamplerState.
///
/// Across ranks (parallel::world()): options.walkers is the total; this process holds the
/// walkers of its parallel::partition() (positions(), logabs() are local). Every rank draws the
/// random numbers of all walkers from the same generator and keeps its own rows, so walker i
/// follows the same chain with any number of ranks, and the generator state is the same on all
/// ranks (cost: each rank draws B·N·3 + B numbers per step instead of its share).
class MetropolisSampler {
 public:
  MetropolisSampler(const SamplerOptions& options, const System& system, torch::TensorOptions tensor,
                    std::uint64_t seed);

  /// Places electrons around nuclei (spin-balanced, neutral-atom counts adjusted by charge),
  /// Gaussian width 1 bohr, and evaluates log|ψ|.
  void initialize(const LogAbsFn& logabs);
  /// Starts from given positions (tiled or truncated to the configured walker count),
  /// keeping this sampler's own generator. @param r [B', N, 3]
  void initialize_from(const torch::Tensor& r, const LogAbsFn& logabs);
  /// Runs `n` MH steps. @return acceptance fraction over those steps.
  double run(const LogAbsFn& logabs, int n);
  /// Multiplies the step size toward the target acceptance (after `run`).
  void adapt(double acceptance);
  /// Re-evaluates log|ψ| at the current positions (after a parameter update).
  void refresh(const LogAbsFn& logabs);

  const torch::Tensor& positions() const { return r_; }
  const torch::Tensor& logabs() const { return logabs_; }
  double step_size() const { return step_size_; }
  /// This rank's walkers (r, logabs [b_local, ...]) and the generator.
  SamplerState state() const;
  /// All walkers, gathered from every rank (a collective: call on all ranks); for checkpoints.
  SamplerState global_state() const;
  /// From this rank's state or from a global one (all walkers; this rank keeps its rows), so
  /// a checkpoint written with any number of ranks continues with any other.
  void set_state(const SamplerState& state);
  /// Index of this rank's first walker among all walkers.
  std::int64_t walker_offset() const { return part_.offset; }

  /// Electron → nucleus assignment used for initialisation: atom index per electron [N],
  /// spin-up electrons first. Exposed for tests.
  static std::vector<int> initial_assignment(const System& system);

 private:
  SamplerOptions options_;
  System system_;
  torch::TensorOptions tensor_;
  torch::Generator gen_;
  torch::Tensor r_, logabs_;
  double step_size_;
  parallel::Communicator* comm_;  ///< world() at construction
  parallel::Partition part_;      ///< this rank's walkers
  /// This rank's rows of a tensor over all walkers.
  torch::Tensor mine(const torch::Tensor& all) const;
};

}  // namespace nnvmc
