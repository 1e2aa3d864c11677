#pragma once
/// @file metropolis.hpp
/// Metropolis–Hastings sampling of |ψ|² with all-electron Gaussian moves.
#include <torch/torch.h>

#include <functional>

#include "core/config.hpp"
#include "core/system.hpp"
#include "parallel/communicator.hpp"
#include "parallel/device_graph.hpp"

namespace nnvmc {

/// log|ψ| of a batch: r [B, N, 3] → [B]. Evaluated without gradients by the sampler.
using LogAbsFn = std::function<torch::Tensor(const torch::Tensor&)>;

/// Everything needed to continue the same Markov chain (all of it is checkpointed).
struct SamplerState {
  torch::Tensor r;          ///< [B, N, 3] positions (bohr)
  torch::Tensor logabs;     ///< [B] log|ψ(r)|
  double step_size = 0.02;  ///< Gaussian move width (bohr)
  torch::Tensor rng_state;  ///< uint8 [24]: the walker streams' seed and counter (parallel::counter_state)
};

/// Metropolis–Hastings walkers. Every walker owns a counter-based random stream keyed by the
/// seed and its global index (parallel/walker_random.hpp), drawn on the walkers' device, so a
/// chain is reproducible, resumes exactly from a SamplerState (the stream state is one
/// counter), and does not depend on the device or dtype of the model.
///
/// Across ranks (parallel::world()): options.walkers is the total; this process holds the
/// walkers of its parallel::partition() (positions(), logabs() are local) and draws their
/// numbers only, so walker i follows the same chain with any number of ranks.
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
  /// @param key what `logabs` depends on (parallel::GraphKey: the function's identity and the
  ///   storages it reads). With a key and a graph mode other than eager (set_graph_mode), each
  ///   step is one replay of a captured graph that keeps positions, log|ψ|, the stream counter
  ///   and the step size in device buffers; the chain is the same as without. Empty: eager.
  double run(const LogAbsFn& logabs, int n, const parallel::GraphKey& key = {});
  /// How run() executes its steps when given a key: eager (default), captured (CUDA graphs on
  /// a CUDA device, eager elsewhere), or emulated (the graph code path on the CPU, for tests).
  void set_graph_mode(parallel::GraphMode mode);
  /// The MH step's graph (null until a keyed run() in a non-eager mode). For tests and reports.
  const parallel::DeviceGraph* step_graph() const { return graph_.get(); }
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
  /// Draws taken from the walker streams so far (one per MH step and per initialize()).
  std::uint64_t draws() const { return draw_; }

  /// Electron → nucleus assignment used for initialisation: atom index per electron [N],
  /// spin-up electrons first. Exposed for tests.
  static std::vector<int> initial_assignment(const System& system);
  /// Where an electron starts: its atom and the width (bohr) of the Gaussian around it.
  struct Placement {
    int atom;
    double width;
  };
  /// Atom and width per electron [N], in the order of initial_assignment().
  static std::vector<Placement> initial_placement(const System& system);
  /// Initial width (bohr) of the k-th electron (from 0) of one spin on an atom of nuclear
  /// charge Z holding `same_spin` electrons of that spin and `other_spin` of the other: the
  /// per-coordinate σ of a Gaussian whose mean distance is the hydrogen-like mean radius
  /// 1.5 n²/Z_eff of its shell, with Z_eff from Slater's screening rules (1s of H: 0.94;
  /// of O: 0.12; O's second shell: 0.83).
  static double shell_width(int Z, int same_spin, int other_spin, int k);

 private:
  SamplerOptions options_;
  System system_;
  torch::TensorOptions tensor_;
  std::uint64_t seed_;            ///< key of the walker streams
  std::uint64_t draw_ = 0;        ///< the streams' counter: the next draw
  torch::Tensor walker_ids_;      ///< [b_local] int64 global walker indices, on the walkers' device
  torch::Tensor r_, logabs_;
  double step_size_;
  parallel::Communicator* comm_;  ///< world() at construction
  parallel::Partition part_;      ///< this rank's walkers
  /// This rank's rows of a tensor over all walkers.
  torch::Tensor mine(const torch::Tensor& all) const;

  // The graph path: one MH step reads and writes only these device buffers (static for a graph).
  parallel::GraphMode graph_mode_ = parallel::GraphMode::eager;
  std::unique_ptr<parallel::DeviceGraph> graph_;
  torch::Tensor g_r_, g_logabs_;  ///< [b, N, 3], [b]: r_ and logabs_ alias these after a graphed run
  torch::Tensor g_draw_;          ///< 0-dim int64: the streams' counter on the device
  torch::Tensor g_step_;          ///< 0-dim: step size (tensor_ dtype)
  torch::Tensor g_accepted_;      ///< 0-dim float64: accepted moves since the run started
  double run_graphed(const LogAbsFn& logabs, int n, const parallel::GraphKey& key);
  /// One MH step on the graph buffers (what the graph captures).
  void graph_step(const LogAbsFn& logabs);
};

}  // namespace nnvmc
