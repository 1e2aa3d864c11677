#pragma once
/// @file setup.hpp
/// Builds the pieces of a VMC run (molecules, model, per-molecule samplers and local energies)
/// from a Config. A run is a list of molecules; one molecule is the list of length one.
#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "batching/chunk_fit.hpp"
#include "core/config.hpp"
#include "core/system.hpp"
#include "hamiltonian/local_energy.hpp"
#include "models/wavefunction.hpp"
#include "sampler/metropolis.hpp"

namespace nnvmc {

struct Checkpoint;  // train/checkpoint.hpp

/// dtype/device of a config's tensors.
torch::TensorOptions tensor_options(const Config& config);

/// Walkers per log|ψ| pass of a molecule's sampler, fitted to run.memory_budget by the first pass
/// and again whenever the memory held for the rest of the run (captured CUDA graphs'
/// pools, batching::held_bytes) has grown since.
struct LogAbsChunk {
  std::int64_t walkers = 0;  ///< 0: not yet measured
  std::int64_t held = 0;     ///< held bytes on the device when it was fitted
};

/// One molecule of a run with its own walkers, sampler state (step size, acceptance, RNG)
/// and local-energy evaluator (chunk size, stochastic-Laplacian RNG).
struct VmcMolecule {
  System system;          ///< the molecule; system.name is unique within the run
  SystemTensors tensors;  ///< `system` as tensors in the run's options (what the model is evaluated on)
  std::unique_ptr<MetropolisSampler> sampler;
  std::unique_ptr<LocalEnergy> local_energy;
  /// The sampler's log|ψ| chunk (shared by every logabs_fn of this molecule).
  std::shared_ptr<LogAbsChunk> logabs_chunk = std::make_shared<LogAbsChunk>();
  const std::string& name() const { return system.name; }
};

/// A ready-to-run VMC setup.
struct VmcSetup {
  Config config;
  torch::TensorOptions options;
  std::shared_ptr<WaveFunction> wf;
  std::vector<VmcMolecule> molecules;  ///< at least one; several only for transferable ansätze
  /// run.memory_budget, parsed: sizes local-energy and per-sample-gradient chunks.
  batching::MemoryBudget budget = batching::MemoryBudget::unlimited();
  /// log|ψ| of molecule `i` without gradients, for its sampler.
  LogAbsFn logabs_fn(std::size_t i = 0) const;
  /// What logabs_fn(i) depends on, for MetropolisSampler::run's graph of the MH step: the
  /// wavefunction, the molecule, and the storage of every parameter and buffer.
  parallel::GraphKey graph_key(std::size_t i = 0) const;
  /// Index of the molecule named `name`. @throws InputError listing the names
  std::size_t molecule_index(const std::string& name) const;
  /// Molecules rebuilt from checkpoint `c` (written inline under their run names, molecule i
  /// for its molecule i) take the names their list gave them (traj@3 for the run's traj_3), where
  /// they have none of their own.
  void keep_given_names(const Checkpoint& c);
};

/// How a walker's working memory is measured against run.memory_budget on the run's device;
/// `what` names one walker in error messages.
batching::ChunkFitOptions walker_fit_options(const VmcSetup& s, const std::string& what);

/// fn over row chunks of x [B, ...] of at most `chunk` rows, concatenated along dim 0 (one
/// call when chunk <= 0 or chunk >= B).
torch::Tensor in_row_chunks(const torch::Tensor& x, std::int64_t chunk,
                            const std::function<torch::Tensor(const torch::Tensor&)>& fn);

/// Seed of a per-molecule random stream: run.seed + stream for molecule 0 (as a one-molecule
/// run always had), a mixed 64-bit value for the others. @param stream 1 sampler, 2 Laplacian
std::uint64_t molecule_seed(std::uint64_t run_seed, std::size_t molecule, int stream);

/// The ansatz `model` for `system`, built and moved to `options` (dtype, device) while CPU
/// tensor allocations are capped at `cap_bytes` (default −1: 60 % of what host_memory() says
/// this process can still allocate; 0 or unknown: no cap). A model whose parameters would not
/// fit is refused before the kernel's OOM killer ends the process. The cap covers the CPU only:
/// a CUDA device reports its own out-of-memory error.
/// @throws BudgetError naming model.<type> and the memory it would pass; what the registry throws
std::shared_ptr<WaveFunction> build_model(const ModelConfig& model, const System& system,
                                          const torch::TensorOptions& options, std::int64_t cap_bytes = -1);

/// What a setup is for: a training also allocates the optimizer's state (checked against the
/// free memory and left out of run.memory_budget "auto"); an evaluation does not.
enum class SetupPurpose { training, evaluation };

/// Builds everything (model parameters freshly initialised from run.seed; the samplers are
/// not yet initialised). Sets the intra-op thread count from run.threads. The resolved config
/// (setup.config) names the molecule (lih) when the config gave none.
/// @throws ConfigError naming system.molecules when the ansatz is not transferable and the
/// config gives more than one molecule; InputError naming the molecule it cannot describe;
/// BudgetError naming model.<type> when the model (build_model) or, for a training, its
/// optimizer state (check_training_memory) does not fit the memory the device has free
/// `trained`: the molecules a checkpoint was trained on (eval's, model.init_from's); a molecule of `config` congruent to one of
/// them (same nuclei up to a rigid motion, same charge and spin) but placed otherwise takes its
/// placement, with a log line: no ansatz here is rotation invariant (electron-nucleus vectors,
/// p orbitals), so the same molecule turned 90 degrees was evaluated as another (H2 along y with
/// an orbformer trained along z: 183 mEh high, exit 0, a user audit), while its energy is the same.
VmcSetup make_setup(const Config& config, SetupPurpose purpose = SetupPurpose::training,
                    const std::vector<System>& trained = {});

}  // namespace nnvmc
