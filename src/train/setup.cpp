#include "train/setup.hpp"

#include "batching/backend.hpp"
#include "core/errors.hpp"
#include "models/registry.hpp"

namespace nnvmc {

System resolve_system(const Config& config) {
  const std::string& spec = config.system.molecule.yaml;
  System s;
  try {
    const bool inline_atoms = spec.find('[') != std::string::npos || spec.find('\n') != std::string::npos;
    s = inline_atoms ? parse_molecule_yaml(spec, "system.molecule")
                     : load_molecule(spec, default_molecules_dir());
    if (inline_atoms) s.name = "inline";
    if (config.system.charge) s.charge = *config.system.charge;
    if (config.system.spin) s.spin = *config.system.spin;
    s.validate();
  } catch (const ConfigError&) {
    throw;
  } catch (const InputError& e) {
    throw InputError(std::string("system.molecule: ") + e.what());
  }
  return s;
}

torch::TensorOptions tensor_options(const Config& config) {
  const auto dtype = config.run.dtype == "float32" ? torch::kFloat32 : torch::kFloat64;
  torch::Device device(torch::kCPU);
  if (config.run.device != "cpu") {
    // The build links libtorch's CPU library only; its CUDA library is loaded on demand.
    try {
      batching::ensure_device_runtime(config.run.device);
    } catch (const InputError& e) {
      throw InputError(std::string("run.device: ") + e.what());
    }
    if (!torch::cuda::is_available())
      throw InputError("run.device: '" + config.run.device + "' requested but no CUDA device is available");
    device = torch::Device(config.run.device);
  }
  return torch::TensorOptions().dtype(dtype).device(device);
}

LogAbsFn VmcSetup::logabs_fn() const {
  auto wf_ptr = wf;
  return [wf_ptr, sys = tensors](const torch::Tensor& r) { return wf_ptr->forward(r, sys).logabs; };
}

VmcSetup make_setup(const Config& config) {
  VmcSetup s;
  s.config = config;
  s.system = resolve_system(config);
  s.options = tensor_options(config);
  s.tensors = system_tensors(s.system, s.options);
  if (config.run.threads > 0) torch::set_num_threads(config.run.threads);
  torch::manual_seed(config.run.seed);  // parameter initialisation
  auto model_config = config.model;
  s.wf = model_registry().create(model_config, s.system);
  s.wf->to(s.options.device(), s.options.dtype().toScalarType());
  s.sampler = std::make_unique<MetropolisSampler>(config.sampler, s.system, s.options,
                                                  config.run.seed + 1);
  s.budget = batching::MemoryBudget::parse(config.run.memory_budget, config.run.device, "run.memory_budget");
  s.local_energy = std::make_unique<LocalEnergy>(
      s.system, make_laplacian(config.hamiltonian, config.run.seed + 2), s.options,
      ChunkPolicy{config.hamiltonian.chunk_walkers, s.budget});
  return s;
}

}  // namespace nnvmc
