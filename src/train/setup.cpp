#include "train/setup.hpp"

#include <algorithm>
#include <limits>
#include <optional>

#include <ATen/Context.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>

#include "batching/backend.hpp"
#include "batching/chunk_fit.hpp"
#include "batching/held_memory.hpp"
#include "batching/peak_memory.hpp"
#include "core/errors.hpp"
#include "parallel/communicator.hpp"
#include "scf/basis.hpp"
#include "parallel/device_graph.hpp"
#include "parallel/gpu_sharing.hpp"
#include "parallel/walker_threads.hpp"
#include "core/log.hpp"
#include "core/molecule_list.hpp"
#include "models/registry.hpp"
#include "train/checkpoint.hpp"
#include "train/optimizer.hpp"

namespace nnvmc {

namespace {
/// Settings of a CUDA run, once the device is known:
/// - the device becomes current on this thread, so that code which restores "the previous
///   device" (CUDA runtime queries, NCCL) returns to this rank's GPU instead of creating a
///   context on GPU 0 in every rank;
/// - LU factorisations (every log-determinant) take cuSOLVER / cuBLAS' batched getrf: libtorch's
///   default sends batches of more than 16 matrices larger than 16 × 16 (any molecule with more
///   than 16 electrons) to MAGMA, which synchronises the device around each call, so a CUDA graph
///   capture of the MH step or the local energy fails and every log-determinant waits for the GPU.
void use_cuda_device(const torch::Device& device) {
  if (device.has_index()) c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->setDevice(device);
  // (libtorch warns that the preference is "experimental"; it is the path its own heuristic takes
  // for small batches, and the run's log says which backend it chose)
  struct Quiet : c10::WarningHandler {
    void process(const c10::Warning&) override {}
  } quiet;
  const c10::WarningUtils::WarningHandlerGuard guard(&quiet);
  try {
    at::globalContext().setLinalgPreferredBackend(at::LinalgBackend::Cusolver);
    log::info("device " + device.str() + ": linear algebra through cuSOLVER / cuBLAS (batched LU of the "
              "log-determinants: not MAGMA)");
  } catch (const c10::Error& e) {  // a libtorch without cuSOLVER: its default, with a word why
    log::warn("device " + device.str() + ": libtorch's default linear-algebra backend (" +
              std::string(e.what_without_backtrace()).substr(0, 120) + "); CUDA graphs may not capture determinants");
  }
}
}  // namespace

torch::TensorOptions tensor_options(const Config& config) {
  const auto dtype = config.run.dtype == "float32" ? torch::kFloat32 : torch::kFloat64;
  torch::Device device(torch::kCPU);
  if (config.run.device != "cpu") {
    // The build links libtorch's CPU library only; its CUDA library is loaded on demand.
    try {
      batching::require_device(config.run.device);
    } catch (const InputError& e) {
      throw InputError(std::string("run.device: ") + e.what());
    }
    device = torch::Device(config.run.device);
    // Several ranks on a node: one GPU per rank ("cuda" without an index → local rank's GPU).
    auto& comm = parallel::world();
    if (comm.size() > 1 && device.is_cuda()) {
      if (!device.has_index())
        device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(
                                                 parallel::rank_gpu(comm, static_cast<int>(torch::cuda::device_count()))));
      // ranks on the same physical GPU (more ranks than GPUs, a config naming one) take their
      // shares of its 'auto'; ranks bound to a GPU each see one GPU but do not share it
      batching::MemoryBudget::set_cuda_auto_sharers(parallel::ranks_sharing_gpu(comm, device.index()));
    }
    if (device.is_cuda()) use_cuda_device(device);
  }
  return torch::TensorOptions().dtype(dtype).device(device);
}

batching::ChunkFitOptions walker_fit_options(const VmcSetup& s, const std::string& what) {
  batching::ChunkFitOptions o;
  o.key = "run.memory_budget";
  o.what = what;
  const auto& d = s.options.device();
  o.cuda_device = d.is_cuda() ? (d.has_index() ? d.index() : 0) : -1;  // "cuda": the current device, 0
  return o;
}

torch::Tensor in_row_chunks(const torch::Tensor& x, std::int64_t chunk,
                            const std::function<torch::Tensor(const torch::Tensor&)>& fn) {
  const auto b = x.size(0);
  if (chunk <= 0 || chunk >= b) return fn(x);
  std::vector<torch::Tensor> pieces;
  for (std::int64_t lo = 0; lo < b; lo += chunk) pieces.push_back(fn(x.slice(0, lo, std::min(b, lo + chunk))));
  return torch::cat(pieces);
}

LogAbsFn VmcSetup::logabs_fn(std::size_t i) const {
  auto wf_ptr = wf;
  const auto& m = molecules.at(i);
  return [wf_ptr, sys = m.tensors, budget = budget, chunk = m.logabs_chunk, name = m.name(),
          o = walker_fit_options(*this, "walker of '" + m.name() + "' (log|psi| for the sampler)")](const torch::Tensor& r) {
    // Without a graph (the sampler), one part of the walkers per CPU thread; with one, one pass
    // (parts writing into one output would race on its autograd history).
    const auto pass = [&](const torch::Tensor& x) {
      const auto b = x.size(0);
      const auto parts = parallel::walker_parts(b, x.device().is_cpu(), !torch::GradMode::is_enabled());
      if (parts == 1) return wf_ptr->forward(x, sys).logabs;
      auto out = torch::empty({b}, x.options());
      parallel::for_each_walker_part(b, parts, [&](std::int64_t lo, std::int64_t hi) {
        out.slice(0, lo, hi).copy_(wf_ptr->forward(x.slice(0, lo, hi), sys).logabs);
      });
      return out;
    };
    const auto b = r.size(0);
    const int device = static_cast<int>(r.get_device());  // −1 on the CPU
    const std::int64_t held = budget.is_unlimited() ? 0 : batching::held_bytes(device);
    // The first call (eager: the sampler's initialisation) measures a walker; a later one again
    // when more memory is held for the rest of the run than when it was fitted, but not inside
    // a graph body: a capture would record the probe passes into every replay (and the memory
    // held since the warm-up is that graph's own pool, the working memory of these passes).
    if (chunk->walkers == 0 || (held > chunk->held && !parallel::in_graph_body())) {
      auto fit_options = o;
      fit_options.cuda_device = device;
      const std::int64_t before = chunk->walkers;
      chunk->walkers = budget.is_unlimited() ? std::numeric_limits<std::int64_t>::max()
                                             : batching::fit_chunk(
                                                   [&](std::int64_t k) {
                                                     torch::NoGradGuard ng;
                                                     (void)pass(r.slice(0, 0, k));
                                                   },
                                                   b, budget, fit_options)
                                                   .chunk;
      chunk->held = held;
      if (chunk->walkers < b && chunk->walkers != before) {
        const std::string held_note = held > 0 ? ", " + batching::format_bytes(double(held)) + " held" : "";
        log::info(strfmt("sampler: log|psi| of '%s' in chunks of %lld walkers (run.memory_budget = %s%s)", name.c_str(),
                         static_cast<long long>(chunk->walkers), batching::format_bytes(double(budget.bytes())).c_str(),
                         held_note.c_str()));
      }
    }
    return in_row_chunks(r, chunk->walkers, pass);
  };
}

parallel::GraphKey VmcSetup::graph_key(std::size_t i) const {
  // logabs_fn(i) evaluates this wavefunction on molecule i's tensors with these parameters.
  parallel::GraphKey key = {wf.get(), molecules.at(i).tensors.nuclei.data_ptr(), molecules.at(i).tensors.charges.data_ptr()};
  for (const auto& p : wf->parameters()) key.push_back(p.data_ptr());
  for (const auto& b : wf->buffers()) key.push_back(b.data_ptr());
  return key;
}

std::size_t VmcSetup::molecule_index(const std::string& name) const {
  std::string all;
  for (std::size_t i = 0; i < molecules.size(); ++i) {
    if (molecules[i].name() == name) return i;
    all += (all.empty() ? "" : ", ") + molecules[i].name();
  }
  // A frame's traj@3 is traj_3 in a run (or traj_3_2, where an entry was named traj_3): found by
  // the name its list gave it. (Matching the usable form found another molecule that had that
  // name, a user audit: traj@1 gave an entry named traj_1, and traj@2 a second copy of frame 0.)
  for (std::size_t i = 0; i < molecules.size(); ++i)
    if (!molecules[i].system.given_name.empty() && molecules[i].system.given_name == name) return i;
  throw InputError("no molecule named '" + name + "' in this run (molecules: " + all + ")");
}

void VmcSetup::keep_given_names(const Checkpoint& c) {
  for (std::size_t i = 0; i < molecules.size() && i < c.molecules.size(); ++i) {
    System& mine = molecules[i].system;
    const std::string& given = c.molecules[i].system.given_name;
    if (!given.empty() && (mine.given_name.empty() || mine.given_name == mine.name)) mine.given_name = given;
  }
}

std::uint64_t molecule_seed(std::uint64_t run_seed, std::size_t molecule, int stream) {
  if (molecule == 0) return run_seed + static_cast<std::uint64_t>(stream);
  // splitmix64 of (seed, molecule, stream): streams of different molecules do not overlap.
  std::uint64_t z = run_seed + 0x9e3779b97f4a7c15ull * (2 * molecule + static_cast<std::uint64_t>(stream));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

namespace {
/// A first evaluation of the forward Laplacian on one walker: an ansatz without a
/// forward-Laplacian program throws its ConfigError here, before a run writes anything.
void check_laplacian_method(const VmcSetup& s, const VmcMolecule& m) {
  if (s.config.hamiltonian.laplacian != "forward") return;
  torch::NoGradGuard ng;
  const auto n = m.system.n_electrons();
  const auto r = torch::linspace(-1.0, 1.0, 3 * n, s.options).view({1, n, 3});
  // Measured like a chunk of one walker, so a molecule too large for the budget (and, on the
  // CPU, for this machine) is a BudgetError here, not the kernel's OOM killer later.
  batching::fit_chunk([&](std::int64_t) { (void)s.wf->forward_laplacian(Blocks<FwdLap>::positions(r), m.tensors); },
                      1, s.budget, walker_fit_options(s, "walker of '" + m.name() + "' (forward-Laplacian local energy)"));
}

/// Refuses a walker count whose positions alone (all molecules together) cannot fit the memory
/// budget (the chains keep several such arrays besides the model's working memory).
void check_walker_memory(const Config& config, const std::vector<System>& systems, const batching::MemoryBudget& budget) {
  double electrons = 0;
  for (const auto& s : systems) electrons += s.n_electrons();
  const double bytes = 8.0 * 3 * electrons * static_cast<double>(config.sampler.walkers);
  if (!budget.is_unlimited() && bytes > static_cast<double>(budget.bytes()))
    throw ConfigError(strfmt("'sampler.walkers': %d walkers of %g electrons (%zu molecule(s)) need %s for their "
                             "positions alone, more than run.memory_budget (%s)",
                             config.sampler.walkers, electrons, systems.size(), batching::format_bytes(bytes).c_str(),
                             batching::format_bytes(double(budget.bytes())).c_str()));
}

/// Bytes this process holds per walker outside the chunked stages, summed over its molecules:
/// the positions, their proposals and the last good state's copy, log|ψ|, local energies and a
/// checkpoint's copies. Measured with run.memory_budget = 64MiB at 10⁵–4·10⁵ walkers (float64,
/// Adam): He 222, LiH 800, H2O 1690 bytes per walker, 4.6–8.3 × the positions' bytes; taken
/// as 8 × the positions' bytes + 128.
double walker_state_bytes(const std::vector<System>& systems, std::int64_t walkers) {
  double per_walker = 0;
  for (const auto& m : systems) per_walker += 8.0 * 3 * m.n_electrons() * 8 + 128;
  return per_walker * static_cast<double>(walkers);
}

/// Refuses a walker count whose state (walker_state_bytes of this rank's walkers; with several
/// ranks also every walker's positions and log|ψ|, which a checkpoint or resume gathers on each
/// rank) and `reserved` bytes (the training's own memory) would take more than 90 % of `room`, the
/// memory this process can use on `device` (−1: unknown, not checked). @return the state's bytes
std::int64_t check_walker_state(const Config& config, const std::vector<System>& systems, const std::string& device,
                                std::int64_t room, std::int64_t reserved) {
  const std::int64_t ranks = std::max(parallel::world().size(), 1), walkers = config.sampler.walkers;
  const std::int64_t mine = (walkers + ranks - 1) / ranks;
  double bytes = walker_state_bytes(systems, mine);
  if (ranks > 1)
    for (const auto& m : systems) bytes += 8.0 * (3 * m.n_electrons() + 1) * static_cast<double>(walkers);
  if (room >= 0 && bytes + static_cast<double>(reserved) > 0.9 * static_cast<double>(room)) {
    const std::string whose = ranks > 1 ? strfmt("%lld walkers of this rank", static_cast<long long>(mine))
                                        : strfmt("%d walkers", config.sampler.walkers);
    throw ConfigError(strfmt("'sampler.walkers': %s hold about %s (positions, their proposals and saved copies, "
                             "log|psi| and local energies: about 8 x the positions' bytes%s)%s, more than 90 %% of the "
                             "%s this process can use on %s; use fewer walkers",
                             whose.c_str(), batching::format_bytes(bytes).c_str(),
                             ranks > 1 ? ", and all ranks' walkers, which checkpoints gather on each rank" : "",
                             reserved > 0 ? (" next to the training's " + batching::format_bytes(double(reserved))).c_str() : "",
                             batching::format_bytes(double(room)).c_str(), device.c_str()));
  }
  return static_cast<std::int64_t>(bytes);
}
}  // namespace

namespace {
/// Every rank must run the same config on the same molecules (they are read per rank, e.g. from
/// each node's files): a different seed or walker count gave a wrong run that exited 0.
void require_same_run_on_all_ranks(const Config& config, const std::vector<System>& systems) {
  if (parallel::world().size() == 1) return;
  std::string text = to_yaml(config);
  for (const auto& m : systems) text += m.exact_description();
  // the basis files the run reads (a changed exponent on one node trained a wrong run to exit 0)
  // (a basis file no rank finds is no difference: an evaluation or resume elsewhere does not
  // pretrain, and a new run says so itself; one that some ranks lack is one)
  const auto basis_lines = [](const std::string& key, const std::string& basis) {
    try {
      return scf::basis_file_lines(basis);
    } catch (const InputError& e) {
      return key + ": " + e.what() + "\n";
    }
  };
  if (config.pretrain.steps > 0) text += basis_lines("pretrain.basis", config.pretrain.basis);
  if (config.model.type == "hf") text += basis_lines("model.hf.basis", config.model.hf.basis);
  if (config.model.type == "paulinet") text += basis_lines("model.paulinet.basis", config.model.paulinet.basis);
  const std::string difference = parallel::first_difference_across_ranks(parallel::world(), text);
  if (!difference.empty())
    throw ConfigError("the ranks of this run were given different settings, molecules or basis files: " + difference +
                      " (every rank must read the same config, overrides, molecule and basis files)");
}
}  // namespace

namespace {
/// Valid settings that do nothing or cost more than an alternative: named once at start-up.
void warn_of_settings_without_effect(const Config& config, const std::vector<System>& systems) {
  int max_electrons = 0;
  for (const auto& m : systems) max_electrons = std::max(max_electrons, m.n_electrons());
  const int probes = config.hamiltonian.hutchinson.probes;
  if (config.hamiltonian.laplacian == "hutchinson" && probes >= 3 * max_electrons)
    log::warn(strfmt("hamiltonian.hutchinson.probes = %d for a Laplacian of %d dimensions: the exact 'forward' "
                     "Laplacian costs about as much as %d probes and has no noise",
                     probes, 3 * max_electrons, 3 * max_electrons));
  if (config.optim.molecules_per_step > static_cast<int>(systems.size()))
    log::warn(strfmt("optim.molecules_per_step = %d, but the run has %zu molecule(s): every iteration trains all of them",
                     config.optim.molecules_per_step, systems.size()));
  for (const auto& m : systems)
    if (const std::string w = m.short_distance_warning(); !w.empty()) log::warn(w);
  // (parse_config writes the optimizer's default in: only another weight was given)
  const double balance_default = config.optim.type == "adam" ? kDeterminantBalanceDefault : 0.0;
  if (config.optim.determinant_balance.value_or(balance_default) != balance_default && config.model.type != "orbformer")
    log::warn(strfmt("optim.determinant_balance = %g has no effect with model.type = %s: the penalty balances an "
                     "orbformer's determinants", *config.optim.determinant_balance, config.model.type.c_str()));
  // (a user audit: 1e-12 threw LiH's energy up by 10 Eh in a few steps, without a word)
  if (config.optim.type == "kfac" && config.optim.kfac.damping < 1e-6)
    log::warn(strfmt("optim.kfac.damping = %g is far below the usual 1e-4 to 1e-3 (FermiNet and DeepQMC use 1e-3): "
                     "the inverse curvature then amplifies its small, noisy eigenvalues, and steps can throw the "
                     "energy up", config.optim.kfac.damping));
  if (config.run.cuda_graphs && config.run.device.rfind("cuda", 0) != 0)
    log::warn("run.cuda_graphs = true has no effect with run.device = " + config.run.device +
              ": CUDA graphs are captured on a CUDA device only");
}
}  // namespace

namespace {
/// The memory this process may use on `device` now (batching::MemoryBudget::room_bytes; −1: unknown).
std::int64_t room_memory(const std::string& device) {
  try {
    return batching::MemoryBudget::room_bytes(device);
  } catch (const BudgetError&) {
    return -1;
  }
}
}  // namespace

std::shared_ptr<WaveFunction> build_model(const ModelConfig& model, const System& system,
                                          const torch::TensorOptions& options, std::int64_t cap_bytes) {
  std::string source = "the cap it was built under";
  if (cap_bytes < 0) {
    const auto host = batching::host_memory();
    // The ansätze build their layers in float32 and convert them to float64 tensor by tensor: the
    // float32 blocks freed on the way stay with the process (glibc's heap) and can add up to half
    // the counted peak to what it really holds, so the cap is 60 % of what is available.
    cap_bytes = host.available > 0 ? static_cast<std::int64_t>(0.6 * static_cast<double>(host.available)) : 0;
    source = "60 % of what this process can still allocate" +
             (host.available_source.empty() ? std::string() : " (" + host.available_source + ")");
  }
  std::optional<batching::WorkingMemoryCap> cap;
  if (cap_bytes > 0) cap.emplace(cap_bytes);
  try {
    auto wf = model_registry().create(model, system);
    // The moved copy (float64 of a float32 build) is allocated before the first is freed.
    wf->to(options.device(), options.dtype().toScalarType());
    return wf;
  } catch (const batching::WorkingMemoryExceeded&) {
    throw BudgetError(strfmt("'model.%s': this model is too large for this machine: building its parameters "
                             "would take more than %s, %s, and was stopped there; use smaller "
                             "widths, fewer layers or fewer determinants (nnvmc config --markdown lists "
                             "model.%s's keys)",
                             model.type.c_str(), batching::format_bytes(double(cap_bytes)).c_str(), source.c_str(),
                             model.type.c_str()));
  }
}

namespace {
/// `systems` placed as the congruent molecules of `trained` (make_setup's `trained`).
void place_as_trained(std::vector<System>& systems, const std::vector<System>& trained) {
  for (System& m : systems) {
    if (std::any_of(trained.begin(), trained.end(), [&](const System& t) { return same_geometry(t, m); })) continue;
    for (const System& t : trained)
      if (t.charge == m.charge && t.spin == m.spin && congruent(t, m)) {
        for (std::size_t a = 0; a < m.atoms.size(); ++a) m.atoms[a].position = t.atoms[a].position;
        log::info(strfmt("%s is trained molecule '%s' turned, moved or mirrored: placed where it was trained (the same "
                         "energy; the ansatz is not rotation invariant)",
                         m.name.c_str(), t.name.c_str()));
        break;
      }
  }
}
}  // namespace

VmcSetup make_setup(const Config& config, SetupPurpose purpose, const std::vector<System>& trained) {
  VmcSetup s;
  std::vector<System> systems = resolve_molecules(config.system);
  place_as_trained(systems, trained);
  require_same_run_on_all_ranks(config, systems);
  warn_of_settings_without_effect(config, systems);
  // The default molecule and sizes left to it are written into the config (config.yaml, checkpoints).
  s.config = as_recorded(config, systems[0].n_electrons());
  s.options = tensor_options(config);
  if (config.run.threads > 0) torch::set_num_threads(config.run.threads);
  parallel::set_walker_threads(config.run.walker_threads);
  torch::manual_seed(config.run.seed);  // parameter initialisation
  // this rank's device (its own GPU under mpirun), not the configured name
  const std::string device = s.options.device().str();
  // An explicit budget is checked before the model is built; "auto" is measured after it, less
  // what a training's optimizer will allocate (the budget bounds working memory, not the model).
  const bool automatic = config.run.memory_budget == "auto";
  if (!automatic) {
    s.budget = batching::MemoryBudget::parse(config.run.memory_budget, device, "run.memory_budget");
    check_walker_memory(config, systems, s.budget);
  }
  s.wf = build_model(s.config.model, systems[0], s.options);
  if (systems.size() > 1 && !s.wf->transferable()) {
    std::string names;
    for (const auto& m : systems) names += (names.empty() ? "" : ", ") + m.name;
    throw ConfigError(strfmt("'system.molecules': %zu molecules given (%s), but the '%s' ansatz describes one molecule "
                             "(its parameters are built for one molecule's atoms and electrons); give one molecule, "
                             "or train several with a transferable ansatz (model.type: orbformer)",
                             systems.size(), names.c_str(), s.config.model.type.c_str()));
  }
  std::int64_t reserved = 0;
  if (purpose == SetupPurpose::training) {
    // Refused above 90 % of the room, so that "auto" keeps at least 6 % of it for working memory.
    const auto ninety_percent = [](std::int64_t room) { return room < 0 ? room : room / 10 * 9; };
    const bool cpu = s.options.device().is_cpu();
    reserved = static_cast<std::int64_t>(check_training_memory(config.optim, *s.wf, cpu, ninety_percent(room_memory(device)),
                                                               cpu ? -1 : ninety_percent(room_memory("cpu"))));
  }
  // The walkers' own state, outside every chunked stage: 'auto' leaves it out (their positions
  // are then not held against what is left, as an explicit budget's are above).
  reserved += check_walker_state(config, systems, device, room_memory(device), reserved);
  if (automatic) s.budget = batching::MemoryBudget::parse("auto", device, "run.memory_budget", reserved);
  for (std::size_t i = 0; i < systems.size(); ++i) {
    VmcMolecule m;
    m.system = systems[i];
    m.tensors = system_tensors(m.system, s.options);
    if (i > 0) {
      try {
        s.wf->check_system(m.tensors);
      } catch (const ConfigError&) {
        throw;
      } catch (const InputError& e) {
        throw InputError("system.molecules: molecule '" + m.name() + "': " + e.what());
      }
    }
    check_laplacian_method(s, m);
    m.sampler = std::make_unique<MetropolisSampler>(config.sampler, m.system, s.options,
                                                    molecule_seed(config.run.seed, i, 1));
    m.local_energy = std::make_unique<LocalEnergy>(
        m.system, make_laplacian(config.hamiltonian, molecule_seed(config.run.seed, i, 2)), s.options,
        ChunkPolicy{config.hamiltonian.chunk_walkers, s.budget});
    m.local_energy->set_first_walker(m.sampler->walker_offset());
    if (config.run.cuda_graphs) {
      m.sampler->set_graph_mode(parallel::GraphMode::captured);
      m.local_energy->set_graph_mode(parallel::GraphMode::captured);
    }
    s.molecules.push_back(std::move(m));
  }
  return s;
}

}  // namespace nnvmc
