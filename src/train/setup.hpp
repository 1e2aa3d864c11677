#pragma once
/// @file setup.hpp
/// Builds the pieces of a VMC run (system, model, sampler, local energy) from a Config.
#include <torch/torch.h>

#include <memory>

#include "core/config.hpp"
#include "core/system.hpp"
#include "hamiltonian/local_energy.hpp"
#include "models/wavefunction.hpp"
#include "sampler/metropolis.hpp"

namespace nnvmc {

/// The molecule of a config with charge/spin overrides applied, validated.
/// @throws InputError naming system.molecule on problems.
System resolve_system(const Config& config);

/// dtype/device of a config's tensors.
torch::TensorOptions tensor_options(const Config& config);

/// A ready-to-run VMC setup.
struct VmcSetup {
  Config config;
  System system;
  torch::TensorOptions options;
  SystemTensors tensors;  ///< `system` as tensors in `options` (what the model is evaluated on)
  std::shared_ptr<WaveFunction> wf;
  std::unique_ptr<MetropolisSampler> sampler;
  std::unique_ptr<LocalEnergy> local_energy;
  /// run.memory_budget, parsed: sizes local-energy and per-sample-gradient chunks.
  batching::MemoryBudget budget = batching::MemoryBudget::unlimited();
  /// log|ψ| without gradients, for the sampler.
  LogAbsFn logabs_fn() const;
};

/// Builds everything (model parameters freshly initialised from run.seed; the sampler is
/// not yet initialised). Sets the intra-op thread count from run.threads.
VmcSetup make_setup(const Config& config);

}  // namespace nnvmc
