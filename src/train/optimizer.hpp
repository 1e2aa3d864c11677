#pragma once
/// @file optimizer.hpp
/// Optimizer interface of the trainer and the VMC gradient estimator.
#include <torch/torch.h>

#include <map>
#include <memory>
#include <string>

#include "batching/budget.hpp"
#include "core/config.hpp"
#include "core/timer.hpp"
#include "models/wavefunction.hpp"

namespace nnvmc {

/// Local energies clipped to median ± width·(mean absolute deviation from the median).
/// @param e [B] @return [B]
torch::Tensor clip_local_energies(const torch::Tensor& e, double width);

/// True when every entry of every tensor is finite: one fused reduction and one host read
/// (undefined tensors are skipped).
bool all_finite(const std::vector<torch::Tensor>& tensors);

/// Named tensors (optimizer state for checkpoints).
using TensorMap = std::map<std::string, torch::Tensor>;

/// The walkers of one molecule and their local energies, as an optimizer step sees them.
struct WalkerBatch {
  const SystemTensors* sys = nullptr;  ///< the molecule (not owned)
  torch::Tensor r;                     ///< [B, N, 3] walkers
  torch::Tensor e_loc;                 ///< [B] local energies
};

/// One optimisation step from a batch of walkers of one or several molecules.
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  /// Computes the VMC gradient, the mean over molecules m of 2·E_m[(E_L − Ē_m)·∇θ log|ψ|]
  /// (with clipped E_L, centred per molecule), and updates the parameters of `wf`.
  /// Non-finite gradients are not applied.
  /// @param batches one entry per molecule @param t iteration (0-based)
  /// @return true when the update was applied
  virtual bool step(WaveFunction& wf, const std::vector<WalkerBatch>& batches, std::int64_t t,
                    StageTimers& timers) = 0;
  /// Learning rate at iteration t.
  virtual double learning_rate(std::int64_t t) const = 0;
  virtual TensorMap state() const = 0;                 ///< for checkpoints
  virtual void load_state(const TensorMap& state) = 0;  ///< @throws CheckpointError
};

/// Builds the optimizer named by options.type for the parameters of `wf`; `budget` bounds the
/// working memory of its per-walker passes (natural-gradient Jacobians).
std::unique_ptr<Optimizer> make_optimizer(const OptimOptions& options, WaveFunction& wf,
                                          const batching::MemoryBudget& budget = batching::MemoryBudget::unlimited());

}  // namespace nnvmc
