#include "train/setup.hpp"

#include "batching/backend.hpp"
#include "core/errors.hpp"
#include "parallel/communicator.hpp"
#include "core/log.hpp"
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
    // Several ranks on a node: one GPU per rank ("cuda" without an index → local rank's GPU).
    auto& comm = parallel::world();
    if (comm.size() > 1 && device.is_cuda() && !device.has_index())
      device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(comm.local_rank() % torch::cuda::device_count()));
  }
  return torch::TensorOptions().dtype(dtype).device(device);
}

LogAbsFn VmcSetup::logabs_fn() const {
  auto wf_ptr = wf;
  return [wf_ptr, sys = tensors](const torch::Tensor& r) { return wf_ptr->forward(r, sys).logabs; };
}

namespace {
/// A first evaluation of the forward Laplacian on one walker: an ansatz without a
/// forward-Laplacian program throws its ConfigError here, before a run writes anything.
void check_laplacian_method(const VmcSetup& s) {
  if (s.config.hamiltonian.laplacian != "forward") return;
  torch::NoGradGuard ng;
  const auto n = s.system.n_electrons();
  const auto r = torch::linspace(-1.0, 1.0, 3 * n, s.options).view({1, n, 3});
  (void)s.wf->forward_laplacian(Blocks<FwdLap>::positions(r), s.tensors);
}

/// Refuses a walker count whose positions alone cannot fit the memory budget (the chain keeps
/// several such arrays besides the model's working memory).
void check_walker_memory(const Config& config, const System& system, const batching::MemoryBudget& budget) {
  const double bytes = 8.0 * 3 * system.n_electrons() * static_cast<double>(config.sampler.walkers);
  if (!budget.is_unlimited() && bytes > static_cast<double>(budget.bytes()))
    throw ConfigError(strfmt("'sampler.walkers': %d walkers of %d electrons need %s for their positions "
                             "alone, more than run.memory_budget (%s)",
                             config.sampler.walkers, system.n_electrons(), batching::format_bytes(bytes).c_str(),
                             batching::format_bytes(double(budget.bytes())).c_str()));
}
}  // namespace

VmcSetup make_setup(const Config& config) {
  VmcSetup s;
  s.config = config;
  s.system = resolve_system(config);
  // Sizes left to the molecule are written into the config (config.yaml, checkpoints).
  s.config.model.ferminet = config.model.ferminet.sized_for(s.system.n_electrons());
  s.options = tensor_options(config);
  s.tensors = system_tensors(s.system, s.options);
  if (config.run.threads > 0) torch::set_num_threads(config.run.threads);
  torch::manual_seed(config.run.seed);  // parameter initialisation
  s.budget = batching::MemoryBudget::parse(config.run.memory_budget, config.run.device, "run.memory_budget");
  check_walker_memory(config, s.system, s.budget);
  s.wf = model_registry().create(s.config.model, s.system);
  s.wf->to(s.options.device(), s.options.dtype().toScalarType());
  check_laplacian_method(s);
  s.sampler = std::make_unique<MetropolisSampler>(config.sampler, s.system, s.options,
                                                  config.run.seed + 1);
  s.local_energy = std::make_unique<LocalEnergy>(
      s.system, make_laplacian(config.hamiltonian, config.run.seed + 2), s.options,
      ChunkPolicy{config.hamiltonian.chunk_walkers, s.budget});
  return s;
}

}  // namespace nnvmc
