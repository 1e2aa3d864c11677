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

/// optim.determinant_balance, or its default when unset (kDeterminantBalanceDefault for adam,
/// 0 for sr, minsr and spring).
double determinant_balance_weight(const OptimOptions& options);

/// One optimisation step from a batch of walkers of one or several molecules.
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  /// Computes the VMC gradient, the mean over molecules m of 2·E_m[(E_L − Ē_m)·∇θ log|ψ|]
  /// (with clipped E_L, centred per molecule), and updates the parameters of `wf`. With a
  /// determinant-balance weight w > 0 and an ansatz that has determinant weights, the mean over
  /// molecules of 2w·∇θP_m (P_m = determinant_balance_penalty with σ_E of the molecule's clipped
  /// energies; oneqmc's relative weight) is added to the gradient (natural gradients: w·∇θP_m
  /// to the right-hand side Ōᵀε). Non-finite gradients are not applied.
  /// @param batches one entry per molecule @param t iteration (0-based)
  /// @return true when the update was applied
  virtual bool step(WaveFunction& wf, const std::vector<WalkerBatch>& batches, std::int64_t t,
                    StageTimers& timers) = 0;
  /// Learning rate at iteration t.
  virtual double learning_rate(std::int64_t t) const = 0;
  virtual TensorMap state() const = 0;                 ///< for checkpoints
  virtual void load_state(const TensorMap& state) = 0;  ///< @throws CheckpointError
};

/// Memory an optimizer takes beside the parameters, in bytes.
struct OptimizerMemory {
  double kept = 0;  ///< kept from step to step and checkpointed (Adam's moments, SPRING's previous update, K-FAC's factors)
  double step = 0;  ///< made by each step: the gradient, the update, K-FAC's sums and Cholesky factors
};

/// What the optimizer named by options.type takes for `wf` outside run.memory_budget, estimated
/// from the parameters' shapes; not the parameters themselves, and not the natural-gradient
/// Jacobian and kernel, which are fitted to the budget.
/// @throws ConfigError naming optim.type when it is unknown
OptimizerMemory optimizer_memory_estimate(const OptimOptions& options, WaveFunction& wf);

/// Bytes a training takes beside its parameters (`parameter_bytes`) outside run.memory_budget:
/// the optimizer's memory, and four copies of the parameters and the optimizer's kept state
/// (the trainer's undo copy for a failed step; a checkpoint's copy, the arrays made of it, the
/// in-memory HDF5 file and its image).
double training_memory_estimate(const OptimizerMemory& optimizer, double parameter_bytes);

/// Refuses a training whose training_memory_estimate is more than `free_bytes` (the memory the
/// run's device has free once the model is built; < 0: unknown, nothing is checked), so that
/// training does not run the machine out of memory. @return the estimate (bytes)
/// @throws BudgetError naming model.<type>, its parameter count and optim.type
double check_training_memory(const OptimOptions& options, WaveFunction& wf, std::int64_t free_bytes);

/// Builds the optimizer named by options.type for the parameters of `wf`; `budget` bounds the
/// working memory of its per-walker passes (natural-gradient Jacobians).
std::unique_ptr<Optimizer> make_optimizer(const OptimOptions& options, WaveFunction& wf,
                                          const batching::MemoryBudget& budget = batching::MemoryBudget::unlimited());

}  // namespace nnvmc
