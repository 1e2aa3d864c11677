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

/// Local energies clipped to median ± width·(mean absolute deviation from the median); width 0:
/// not clipped. @param e [B] @return [B]
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
  /// The learning rate the step of iteration t applied: learning_rate(t), or less where a norm
  /// constraint shortened the step (K-FAC, SR/minSR/SPRING). result.h5's learning_rate series (it
  /// logged the schedule while the constraint set every early step, a user audit). Call after
  /// step(t) and a host read that waits for it (the trainer's finiteness check): it does not sync.
  virtual double applied_learning_rate(std::int64_t t) const { return learning_rate(t); }
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

/// Memory a training takes beside its parameters outside run.memory_budget, in bytes.
struct TrainingMemory {
  double device = 0;  ///< on the run's device: the optimizer's memory and the undo copy of the parameters and kept state
  double host = 0;    ///< on the host: a checkpoint's copy of both, the arrays made of it, the in-memory HDF5 file and its image
  double total() const { return device + host; }
};

/// The training memory of an optimizer's `optimizer` memory for parameters of `parameter_bytes`
/// (measured on the CPU: a 100 M-parameter Psiformer with Adam peaked at 15.7 × its parameters'
/// bytes while its checkpoint was written; parameters plus this estimate: 16 ×).
TrainingMemory training_memory_estimate(const OptimizerMemory& optimizer, double parameter_bytes);

/// Refuses a training that would not fit: on a CPU run (`cpu`) the whole training_memory_estimate
/// against `device_room`, on a GPU its device part against `device_room` and its host part
/// against `host_room` (each the memory the model leaves this process there; < 0: unknown, not
/// checked). @return the bytes it takes on the run's device (what "auto" leaves out)
/// @throws BudgetError naming model.<type>, its parameter count and optim.type
double check_training_memory(const OptimOptions& options, WaveFunction& wf, bool cpu, std::int64_t device_room,
                             std::int64_t host_room);

/// Builds the optimizer named by options.type for the parameters of `wf`; `budget` bounds the
/// working memory of its per-walker passes (natural-gradient Jacobians).
std::unique_ptr<Optimizer> make_optimizer(const OptimOptions& options, WaveFunction& wf,
                                          const batching::MemoryBudget& budget = batching::MemoryBudget::unlimited());

}  // namespace nnvmc
