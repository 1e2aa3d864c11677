#pragma once
/// @file local_energy.hpp
/// E_L = −½(∇²log|ψ| + |∇log|ψ||²) + V_ee + V_en + V_nn, evaluated in walker chunks whose
/// size is either fixed or derived from a memory budget (run.memory_budget).
#include <torch/torch.h>

#include <memory>
#include <string>

#include "batching/budget.hpp"
#include "batching/chunk_fit.hpp"
#include "core/system.hpp"
#include "core/timer.hpp"
#include "hamiltonian/laplacian.hpp"
#include "parallel/device_graph.hpp"

namespace nnvmc {

/// Local energy and its parts per walker (all detached).
struct LocalEnergyTerms {
  torch::Tensor energy;     ///< [B] E_L
  torch::Tensor kinetic;    ///< [B] −½(∇²log|ψ| + |∇log|ψ||²)
  torch::Tensor potential;  ///< [B] V
};

/// How walkers are split into chunks.
struct ChunkPolicy {
  std::int64_t walkers = 0;  ///< fixed walkers per chunk; 0: size chunks from `budget`
  batching::MemoryBudget budget = batching::MemoryBudget::unlimited();  ///< working memory
  double margin = 0.85;      ///< fraction of the budget the fitted chunk may use (model error)
  /// With graphed evaluations (set_graph_mode), the share of the budget the chunk is fitted to:
  /// the graph's pool keeps that working memory for the whole run, and the rest stays for the
  /// stages that are not captured (per-sample gradients, optimizer), which plan around the pool.
  /// The pool is shared by the device's graphs (a capture reuses what earlier ones freed), so
  /// this fit does not subtract what the pool already holds.
  double graph_share = 0.5;
  std::string budget_key = "run.memory_budget";  ///< names the budget in error messages
};

/// Evaluates local energies of a molecule with a chosen Laplacian method.
///
/// With ChunkPolicy::walkers = 0 and a finite budget, the first evaluation measures the peak
/// working memory of one walker and of a few walkers (high-water mark of the CPU allocator, or
/// of libtorch's CUDA caching allocator for walkers on a CUDA device), fits
/// peak(c) = fixed + c·per_walker, and uses the largest chunk with peak ≤ margin·budget. The
/// stochastic method's RNG is restored after the measurement, so results do not depend on it.
///
/// On the CPU with several intra-op threads, the walkers are split into one part per thread
/// (parallel::for_each_walker_part) and each part is evaluated in chunks of chunk()/parts
/// walkers, so the parts together stay within the memory the chunk was fitted to.
class LocalEnergy {
 public:
  LocalEnergy(const System& system, std::unique_ptr<LaplacianMethod> method,
              torch::TensorOptions options, ChunkPolicy policy = {});
  /// @param r [B, N, 3] @return terms per walker
  /// @param key what `wf` evaluates with (parallel::GraphKey: the wavefunction, the storage of
  ///   its parameters). With a key, a graph mode other than eager and a capturable() method,
  ///   the evaluation (after the chunk calibration) is one replay of a captured graph that reads
  ///   r from a device buffer; the results are the same. Empty: eager.
  /// @throws BudgetError when one walker does not fit the budget.
  LocalEnergyTerms operator()(WaveFunction& wf, const torch::Tensor& r, const parallel::GraphKey& key = {});
  /// How keyed evaluations run: eager (default), captured (CUDA graphs on a CUDA device) or
  /// emulated (the graph code path on the CPU, for tests).
  void set_graph_mode(parallel::GraphMode mode);
  /// The evaluation's graph (null until a keyed evaluation in a non-eager mode with a
  /// capturable method). For tests and reports.
  const parallel::DeviceGraph* graph() const { return graph_.get(); }
  /// Walkers per chunk (0: all; before the first evaluation also when still to be measured).
  std::int64_t chunk() const { return chunk_; }
  /// The calibration (zeros unless the chunk came from the budget).
  const batching::ChunkFit& calibration() const { return calibration_; }
  LaplacianMethod& method() { return *method_; }
  /// The molecule the energies are evaluated for (nuclei in the walkers' dtype/device).
  const SystemTensors& system() const { return sys_; }
  /// Times the parts of each evaluation as stages "local_energy.laplacian" and
  /// "local_energy.potential" in `timers` (nullptr: not timed). Not owned.
  void set_timers(StageTimers* timers) { timers_ = timers; }
  /// Global index of the first walker this process evaluates (its rank's walker offset), so a
  /// stochastic Laplacian draws each walker's own numbers whatever the ranks, parts and chunks.
  void set_first_walker(std::int64_t first) { first_walker_ = first; }

 private:
  /// @param timed record the laplacian/potential parts in timers_ (not inside a graph)
  LocalEnergyTerms evaluate(WaveFunction& wf, const torch::Tensor& r, std::int64_t chunk, bool timed = true);
  /// @param graphed fit ChunkPolicy::graph_share of the budget, joining the graph pool (held
  /// memory not subtracted) @see ChunkPolicy::graph_share
  void calibrate(WaveFunction& wf, const torch::Tensor& r, bool graphed);

  std::unique_ptr<LaplacianMethod> method_;
  SystemTensors sys_;
  double e_nn_;
  ChunkPolicy policy_;
  std::int64_t chunk_;
  batching::ChunkFit calibration_;
  StageTimers* timers_ = nullptr;
  std::int64_t first_walker_ = 0;

  // The graph path: the captured evaluation reads g_r_ and writes g_kinetic_, g_potential_.
  parallel::GraphMode graph_mode_ = parallel::GraphMode::eager;
  std::unique_ptr<parallel::DeviceGraph> graph_;
  torch::Tensor g_r_, g_kinetic_, g_potential_;  ///< [B, N, 3], [B], [B]
  LocalEnergyTerms evaluate_graphed(WaveFunction& wf, const torch::Tensor& r, const parallel::GraphKey& key);
};

}  // namespace nnvmc
