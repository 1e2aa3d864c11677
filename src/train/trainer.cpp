#include "train/trainer.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <optional>
#include <random>
#include <regex>

#include <signal.h>
#include <unistd.h>

#include "batching/backend.hpp"
#include "batching/device_stage_timing.hpp"
#include "core/config_diff.hpp"
#include "core/errors.hpp"
#include "parallel/communicator.hpp"
#include "parallel/launcher.hpp"
#include "core/log.hpp"
#include "io/hdf5_file.hpp"
#include "io/output_kind.hpp"
#include "scf/basis.hpp"
#include "train/distributed.hpp"
#include "train/finite_walkers.hpp"
#include "train/molecule_batches.hpp"
#include "train/pretrain.hpp"
#include "train/run_checkpoint.hpp"
#include "train/stop_request.hpp"
#include "train/summary.hpp"

namespace nnvmc {
namespace fs = std::filesystem;
namespace {
/// The first SIGINT/SIGTERM/SIGHUP asks the run to stop at its next step (a checkpoint in the training
/// loop); the handler then gives the signal back its default action, so a second one ends the
/// process at once (e.g. in the middle of a long iteration).
void on_signal_then_default(int sig) {
  set_stop_requested(true);
  std::signal(sig, SIG_DFL);
}
void on_signal(int) { set_stop_requested(true); }
double now() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}
std::string fmt_duration(double s) {
  const long t = static_cast<long>(s);
  return t >= 3600 ? strfmt("%ldh%02ldm", t / 3600, (t % 3600) / 60)
                   : strfmt("%ldm%02lds", t / 60, t % 60);
}
/// Files a run leaves in its output directory (a new run refuses a directory holding them).
/// The files of a run (what --force replaces).
const char* const kPreviousRunFiles[] = {"checkpoint.h5", kOlderCheckpointName, "result.h5", "summary.json", "config.yaml"};
/// One row per iteration in result.h5: the run-level series (train/NAME) and each molecule's
/// (train/MOLECULE/NAME), in the order they are written.
const char* const kRunSeries[] = {"energy",        "variance",         "acceptance", "step_size",
                                  "learning_rate", "excluded_walkers", "seconds"};
const char* const kMoleculeSeries[] = {"energy", "variance", "acceptance", "step_size", "excluded_walkers"};
/// Deep copies (optimizer states hold tensors that their step updates in place).
TensorMap cloned(const TensorMap& m) {
  TensorMap out;
  for (const auto& [k, v] : m) out[k] = v.clone();
  return out;
}
/// Training needs parameters, pretraining the basis for every molecule and an ansatz with
/// orbitals: checked before anything is written.
void check_pretraining(const VmcSetup& s) {
  require_walkers_to_train(s.config);
  const bool no_parameters = s.wf->parameters().empty();
  if (no_parameters && s.config.optim.iterations > 0)
    throw ConfigError("optim.iterations: the '" + s.config.model.type + "' ansatz has no parameters to train; "
                      "set optim.iterations=0 to evaluate it");
  if (s.config.pretrain.steps <= 0) return;
  if (no_parameters)
    throw ConfigError("pretrain.steps: the '" + s.config.model.type + "' ansatz has no parameters to pretrain; "
                      "set pretrain.steps=0");
  for (const auto& m : s.molecules) {
    std::size_t functions = 0;
    try {
      functions = scf::make_basis(s.config.pretrain.basis, m.system).n_functions();
    } catch (const InputError& e) {
      throw ConfigError(std::string("pretrain.basis: ") + e.what());
    }
    const int most = std::max(m.system.n_up(), m.system.n_down());
    if (functions < static_cast<std::size_t>(most))  // (the SCF said so without naming the key)
      throw ConfigError(strfmt("pretrain.basis: '%s' has %zu functions for %s, too few for its %d electrons of one "
                               "spin; choose a larger pretrain.basis (e.g. cc-pvdz) or set pretrain.steps=0",
                               s.config.pretrain.basis.c_str(), functions, m.name().c_str(), most));
    // An anion's extra electron needs diffuse functions: without them its UHF target is far from it
    // (a user audit: H- in STO-6G, E_HF -0.167 Eh against -0.528 exact; a Psiformer pretrained on
    // it was not bound after 300 iterations, -0.511 Eh)
    const std::string& basis = s.config.pretrain.basis;
    const bool diffuse = basis.rfind("aug-", 0) == 0 || basis.find('+') != std::string::npos;
    if (m.system.charge < 0 && !diffuse && !scf::is_basis_path(basis))
      log::warn(strfmt("%s is an anion, and pretrain.basis '%s' has no diffuse functions for its extra electron: "
                       "the pretraining target is poor; give pretrain.basis=aug-cc-pvdz",
                       m.name().c_str(), basis.c_str()));
  }
  const auto& m = s.molecules.front();
  try {
    torch::NoGradGuard ng;
    (void)s.wf->orbitals(torch::zeros({1, m.system.n_electrons(), 3}, s.options), m.tensors);
  } catch (const InputError&) {
    throw;
  } catch (const Error& e) {
    throw ConfigError("pretrain.steps: the '" + s.config.model.type + "' ansatz cannot be pretrained (" +
                      e.what() + "); set pretrain.steps=0");
  }
}
}  // namespace

std::string resolve_output_dir(const Config& config) {
  std::string out = config.run.output;
  const auto pos = out.find("<name>");
  if (pos != std::string::npos) out.replace(pos, 6, config.run.name.empty() ? "run" : config.run.name);
  return out;
}

void Trainer::install_signal_handlers(bool second_signal_ends) {
  const auto handler = second_signal_ends ? on_signal_then_default : on_signal;
  std::signal(SIGINT, handler);
  std::signal(SIGTERM, handler);
  // A closed terminal or ssh session (SIGHUP) stops the run as SIGTERM does, with its checkpoint:
  // it killed the run, losing the iterations since the last one (a user audit). Under nohup,
  // which ignores SIGHUP, the run goes on.
  struct sigaction current {};
  if (sigaction(SIGHUP, nullptr, &current) == 0 && current.sa_handler != SIG_IGN) std::signal(SIGHUP, handler);
}
void Trainer::request_stop(bool stop) { set_stop_requested(stop); }

namespace {
/// A new run's identity (Checkpoint::run_id): 64 random bits in hex.
std::string new_run_id() {
  std::random_device rd;
  return strfmt("%08x%08x", static_cast<unsigned>(rd()), static_cast<unsigned>(rd()));
}
}  // namespace

void init_from_checkpoint(VmcSetup& s) {
  // a run's output directory stands for its checkpoint.h5, as for eval and --resume
  std::string path;
  Checkpoint c;
  try {
    // (a damaged latest checkpoint falls back to the one before it, as for eval and --resume)
    path = readable_checkpoint("'model.init_from'", run_checkpoint("'model.init_from':", s.config.model.init_from), &c);
  } catch (const ConfigError&) {
    throw;
  } catch (const InputError& e) {  // a missing or damaged file: name the key that gave it
    const std::string what = e.what();
    throw ConfigError(what.rfind("'model.init_from'", 0) == 0 ? what : "'model.init_from': " + what);
  }
  require_same_checkpoint_on_all_ranks(c, "'model.init_from': " + path);
  const Config trained = parse_config(c.config_yaml, {}, path + ":config");
  if (trained.model.type != s.config.model.type)
    throw ConfigError("'model.init_from': " + path + " holds a model of type '" + trained.model.type +
                      "', this run builds '" + s.config.model.type + "'");
  // The settings of this ansatz that differ from the trained ones (model.<type>.*)
  std::vector<SettingChange> changed;
  const std::string prefix = "model." + s.config.model.type + ".";
  for (auto& ch : setting_changes(trained, s.config))
    if (ch.key.rfind(prefix, 0) == 0) changed.push_back(std::move(ch));
  // Changed settings that leave trained parameters out build another wavefunction (the
  // loader itself leaves out Orbformer's edge_scale*, which old checkpoints hold unused)
  std::string left_out;
  const auto params = s.wf->named_parameters();
  for (const auto& [name, value] : c.parameters) {
    const bool retired = !trained.model.orbformer.edge_features && is_retired_parameter(name);  // (unused)
    if (!params.contains(name) && !retired) left_out += (left_out.empty() ? "" : ", ") + name;
  }
  if (!left_out.empty() && !changed.empty())
    throw ConfigError("'model.init_from': " + path + " holds parameters this model does not have (" + left_out +
                      "): the changed settings " + describe_changes(changed) + " build another model; give the "
                      "settings it was trained with");
  std::vector<const System*> targets;
  for (const auto& m : s.molecules) targets.push_back(&m.system);
  try {
    // A parameter the model lacks is refused, as on resume: leaving it out (layer_norm or the
    // Jastrow switched off) fine-tuned another wavefunction than the one trained.
    load_trained_state(*s.wf, c, targets);
  } catch (const CheckpointError& e) {
    throw ConfigError("'model.init_from': " + path + ": " + e.what() + " (build the model with the options it was "
                      "trained with, model." + s.config.model.type +
                      (changed.empty() ? std::string(")") : "; changed: " + describe_changes(changed) + ")"));
  }
  if (!changed.empty())  // the same parameters, another function of them (e.g. a cusp setting)
    log::warn("'model.init_from': model settings differ from those " + path + " was trained with: " +
              describe_changes(changed) + "; its parameters are loaded into the model these settings build");
  std::string names;
  for (const auto& m : c.molecules) names += (names.empty() ? "" : ", ") + m.system.name;
  log::info(strfmt("parameters from %s (iteration %ld, trained on %s); optimizer and walkers start fresh", path.c_str(),
                   static_cast<long>(c.iteration), names.c_str()));
}

namespace {
/// The molecules of a checkpoint, for make_setup's `trained`: a fine-tuning on one of
/// model.init_from's molecules turned or moved trains it where it was trained, as eval evaluates
/// it, and its resume places it there again (config.yaml names the molecule as the user gave it).
std::vector<System> molecules_of(const Checkpoint& c) {
  std::vector<System> trained;
  for (const auto& m : c.molecules) trained.push_back(m.system);
  return trained;
}

/// model.init_from's molecules (none without it, or when it cannot be read: init_from_checkpoint
/// reads it again and says why).
std::vector<System> init_from_molecules(const Config& config) {
  if (config.model.init_from.empty()) return {};
  try {
    const log::Quiet quiet;  // (read again with its messages)
    Checkpoint c;
    readable_checkpoint("'model.init_from'", run_checkpoint("'model.init_from':", config.model.init_from), &c);
    return molecules_of(c);
  } catch (const Error&) {
    return {};
  }
}
}  // namespace

Trainer::Trainer(const Config& config)
    : Trainer(make_setup(config, SetupPurpose::training, init_from_molecules(config))) {}

void Trainer::time_stages_on_device() {
  // NNVMC_STAGE_SYNC=1: a device wait at every stage boundary instead of events, as the trainer
  // did before 2026-12-05 (bench/gpu_vmc_check.sh stage 2s compares the two)
  const char* sync = std::getenv("NNVMC_STAGE_SYNC");
  device_timing_ = batching::device_stage_timing(setup_.options.device(), sync && std::string(sync) == "1");
  device_timing_.attach(timers_);
}

namespace {
/// E_HF of pretraining's target, with what it is.
HartreeFockEnergy pretraining_target(double energy, const std::string& basis) {
  return {energy, "UHF/" + basis + ", pretraining's target"};
}
}  // namespace

Trainer::Trainer(VmcSetup setup) : setup_(std::move(setup)) {
  const Config& config = setup_.config;
  time_stages_on_device();
  check_pretraining(setup_);
  if (!config.model.init_from.empty()) init_from_checkpoint(setup_);
  optimizer_ = make_optimizer(config.optim, *setup_.wf, setup_.budget);
  output_ = resolve_output_dir(config);
  run_id_ = new_run_id();
  init_output(false);
  for (auto& m : setup_.molecules) m.local_energy->set_timers(&timers_);
  if (config.pretrain.steps > 0) {
    const auto p = pretrain(setup_, config.pretrain, timers_);
    for (const auto& m : p.molecules) e_hf_.push_back(pretraining_target(m.e_hf, config.pretrain.basis));
    if (writes_output()) {
      io::H5File results(output_ + "/result.h5", io::H5File::Mode::append);
      double e_hf = 0;
      for (size_t i = 0; i < p.molecules.size(); ++i) {
        const std::string g = "pretrain/" + setup_.molecules[i].name() + "/";
        results.append(g + "initial_loss", p.molecules[i].initial_loss);
        results.append(g + "final_loss", p.molecules[i].final_loss);
        results.append(g + "e_hf", p.molecules[i].e_hf);
        e_hf += p.molecules[i].e_hf / static_cast<double>(p.molecules.size());
      }
      results.append("pretrain/initial_loss", p.initial_loss);
      results.append("pretrain/final_loss", p.final_loss);
      results.append("pretrain/e_hf", e_hf);
      results.flush();  // a failed write is an error here, not a silent close
    }
  }
  // Walkers start (or continue from pretraining) on |ψ|²; burn-in happens in run().
  for (size_t i = 0; i < setup_.molecules.size(); ++i) {
    auto& sampler = *setup_.molecules[i].sampler;
    if (sampler.positions().defined())
      sampler.refresh(setup_.logabs_fn(i));
    else
      sampler.initialize(setup_.logabs_fn(i));
  }
}

Trainer::Trainer(const Config& config, const std::string& checkpoint_path)
    : Trainer(config, checkpoint_path, load_checkpoint(checkpoint_path)) {}

Trainer::Trainer(const Config& config, const std::string& checkpoint_path, Checkpoint c)
    : setup_(make_setup(config, SetupPurpose::training, molecules_of(c))), resumed_(true) {
  time_stages_on_device();
  // (a run of an ansatz without parameters resumed with more iterations trained "nothing" to
  // exit 0 with SR-type optimizers and failed inside libtorch with Adam)
  if (setup_.wf->parameters().empty() && config.optim.iterations > 0)
    throw ConfigError("optim.iterations: the '" + config.model.type + "' ansatz has no parameters to train; "
                      "evaluate the run with 'nnvmc eval' instead of resuming it");
  require_same_checkpoint_on_all_ranks(c, "--resume " + checkpoint_path);
  checkpoint_config_ = parse_config(c.config_yaml, {}, checkpoint_path + ":config");
  checkpoint_config_.run.output = config.run.output;  // (a copied run continues where it is)
  checkpoint_config_.system = config.system;          // (the checkpoint's molecules where their files are out of reach)
  auto& mols = setup_.molecules;
  if (c.molecules.size() != mols.size())
    throw InputError(strfmt("--resume: the checkpoint holds %zu molecule(s), the config %zu; the run continues the "
                            "same Markov chains, so the molecules must be the ones trained on",
                            c.molecules.size(), mols.size()));
  for (size_t i = 0; i < mols.size(); ++i) {
    if (check_checkpoint_system(c.molecules[i].system, mols[i].system, *setup_.wf)) continue;
    // (a list given in another order was blamed on changed nuclei: a user audit) The trained
    // molecules in another order: each of the config's is a different one of the checkpoint's.
    std::vector<size_t> trained_as(mols.size(), c.molecules.size());
    {
      const log::Quiet quiet;  // (the search's "nuclei moved" lines)
      std::vector<bool> taken(c.molecules.size(), false);
      for (size_t k = 0; k < mols.size(); ++k)
        for (size_t j = 0; j < c.molecules.size() && trained_as[k] == c.molecules.size(); ++j) {
          bool same = false;
          try {
            same = !taken[j] && check_checkpoint_system(c.molecules[j].system, mols[k].system, *setup_.wf);
          } catch (const InputError&) {
          }
          if (same) trained_as[k] = j, taken[j] = true;
        }
    }
    if (std::none_of(trained_as.begin(), trained_as.end(), [&](size_t j) { return j == c.molecules.size(); })) {
      std::string order;
      for (const auto& m : c.molecules) order += (order.empty() ? "" : ", ") + m.system.name;
      throw InputError(strfmt("--resume: the config lists the molecules in another order: its molecule %zu ('%s') "
                              "is the checkpoint's molecule %zu; each molecule continues its own Markov chain, so "
                              "list them in the order they were trained in (%s)",
                              i, mols[i].system.name.c_str(), trained_as[i], order.c_str()));
    }
    throw InputError("--resume: the run continues the same Markov chain, so the molecule must be the one "
                       "trained on ('" + c.molecules[i].system.name + "'), but the config's molecule " +
                       std::to_string(i) + " ('" + mols[i].system.name +
                       "') now has other nuclei or electrons (an override, or a molecule file changed since); to "
                       "start from these parameters at another geometry, evaluate it or start a new run "
                       "(model.init_from)");
  }
  // The result series, summary and checkpoint keep each molecule by name: a renamed one split
  // its series in two (a user audit: train/lih_2.6 stopped, train/A began with NaN rows)
  // (a run begun before entries that change the charge or spin were named for it, "lih" or
  // "lih_2" for {molecule: lih, charge: 1}, now "lih_cation", keeps its name: its series are under it)
  static const std::regex renamed_ion("(.+?)(_cation|_anion|_charge[+-][0-9]+)?(_spin[0-9]+)?(_[0-9]+)?");
  static const std::regex numbered("(.+?)(_[0-9]+)?");
  for (size_t i = 0; i < mols.size(); ++i) {
    const std::string& was = c.molecules[i].system.name;
    const std::string now = mols[i].system.name;
    std::smatch n, w;
    if (was != now && std::regex_match(now, n, renamed_ion) && (n[2].matched || n[3].matched) &&
        std::regex_match(was, w, numbered) && n[1].str() == w[1].str()) {
      mols[i].system.name = was;
      log::info("--resume: molecule '" + now + "' keeps the name '" + was + "' it was trained under");
    }
  }
  for (size_t i = 0; i < mols.size(); ++i)
    if (c.molecules[i].system.name != mols[i].system.name)
      throw InputError("--resume: the config's molecule " + std::to_string(i) + " is named '" + mols[i].system.name +
                       "', the checkpoint's '" + c.molecules[i].system.name + "'; the run's results are kept by "
                       "molecule name, so names cannot change on resume (name it '" + c.molecules[i].system.name +
                       "', or start a new run with model.init_from)");
  // (the checkpoint's molecules, written inline under their run names, keep the names their list
  // gave them: eval --molecule traj@3 of the continued run)
  setup_.keep_given_names(c);
  load_module_state(*setup_.wf, c.parameters);
  load_frozen_state(*setup_.wf, c);  // same molecules at the same geometries (checked above)
  optimizer_ = make_optimizer(config.optim, *setup_.wf, setup_.budget);
  optimizer_->load_state(c.optimizer);
  for (size_t i = 0; i < mols.size(); ++i) {
    mols[i].sampler->set_state(c.molecules[i].sampler);
    mols[i].local_energy->method().set_rng_state(c.molecules[i].laplacian_rng);
    mols[i].local_energy->set_timers(&timers_);
  }
  iteration_ = c.iteration;
  trained_before_ = c.trained_seconds;
  run_id_ = c.run_id;  // (empty in a checkpoint from before run ids: init_output adopts result.h5's or draws one)
  history_ = c.history;
  output_ = fs::path(checkpoint_path).parent_path().string();
  if (output_.empty()) output_ = ".";
  // (a resume from another file of the directory, e.g. a copy, writes checkpoint.h5 beside it)
  if (std::error_code ec; fs::equivalent(checkpoint_path, fs::path(output_) / "checkpoint.h5", ec))
    last_checkpoint_ = c.iteration;
  read_pretraining_energies();
  init_output(true);
}

void Trainer::stop_if_diverged(const VmcMolecule& molecule, double energy, double error, std::int64_t iteration) const {
  const double bound = molecule.system.energy_lower_bound();
  if (!energy_below_bound(energy, error, bound)) return;
  // (every rank measured the same energy of all walkers: all stop here)
  const std::string dir = output_.empty() ? std::string("the run") : output_;
  throw NumericalError(strfmt(
      "training diverged at iteration %ld: the energy of %s, %.6g +- %.2g Eh, is below %.6f Eh, a rigorous lower "
      "bound on the energy of any wavefunction of this molecule. The walkers no longer sample |psi|^2: the wavefunction changed faster "
      "than they follow, as a too large optim.lr (%g) makes it. %s",
      static_cast<long>(iteration), molecule.name().c_str(), energy, error, bound, setup_.config.optim.lr,
      last_checkpoint_ >= 0
          ? strfmt("Its last checkpoint (iteration %ld, in %s) was written before this; evaluate it (nnvmc eval %s) "
                   "before resuming it with a smaller optim.lr, or start again",
                   static_cast<long>(last_checkpoint_), dir.c_str(), dir.c_str())
                .c_str()
          : "No checkpoint was written: start again with a smaller optim.lr"));
}

std::vector<HartreeFockEnergy> Trainer::hartree_fock_energies() const {
  if (!e_hf_.empty() || setup_.molecules.size() != 1) return e_hf_;
  const auto built_in = setup_.wf->built_in_hartree_fock();
  if (!built_in) return {};
  return {*built_in};
}

void Trainer::read_pretraining_energies() {
  // (rank 0 warns; a result.h5 without them, or unreadable, only leaves the check out)
  const std::string path = output_ + "/result.h5";
  std::error_code ec;
  if (!parallel::world().is_root() || !fs::is_regular_file(path, ec)) return;
  try {
    const io::H5File results(path, io::H5File::Mode::read);
    for (const auto& m : setup_.molecules) {
      const std::string name = "pretrain/" + m.name() + "/e_hf";
      if (!results.exists(name)) return e_hf_.clear();
      const io::Array a = results.read(name);
      if (a.dtype != io::DType::f64 || a.numel() < 1) return e_hf_.clear();
      e_hf_.push_back(pretraining_target(a.as<double>()[a.numel() - 1], setup_.config.pretrain.basis));
    }
  } catch (const Error&) {
    e_hf_.clear();
  }
}

namespace {
/// Whether `dir` holds a run set aside as *.previous by a --force start (its checkpoint or summary).
bool holds_set_aside_run(const fs::path& dir) {
  std::error_code ec;
  return fs::exists(dir / "checkpoint.h5.previous", ec) || fs::exists(dir / "summary.json.previous", ec);
}
}  // namespace

/// Refuses or sets aside what the output directory holds; it exists and this process holds its lock (init_output).
void Trainer::prepare_new_output() const {
  std::error_code ec;
  const fs::path out(output_);
  if (const std::string marker = io::comparison_marker(output_); !marker.empty())  // (even with --force)
    throw InputError("run.output: '" + output_ + "' holds a comparison (" + marker +
                     "), not a training run; choose another run.output");
  if (const std::string marker = io::profile_marker(output_); !marker.empty())
    throw InputError("run.output: '" + output_ + "' holds a profile (" + marker +
                     "), not a training run; choose another run.output");
  // A run is what can be continued or read: a checkpoint or a summary. A start killed before
  // its first checkpoint left only config.yaml and result.h5, which are replaced.
  const bool has_run = fs::exists(out / "checkpoint.h5", ec) || fs::exists(out / kOlderCheckpointName, ec) ||
                       fs::exists(out / "summary.json", ec);
  // a run set aside by a --force start killed (or failed after it trained) before its first checkpoint
  const bool set_aside = holds_set_aside_run(out);
  if (set_aside && !has_run && !setup_.config.run.overwrite)
    throw InputError("run.output: '" + output_ + "' holds a run set aside as *.previous by a --force start that "
                     "ended before its first checkpoint; rename those files back (drop the suffix) to continue "
                     "it with --resume, choose another run.output, or start over with --force");
  if (!has_run)
    if (const auto theirs = io::foreign_run_files(output_); !theirs.empty()) {
      std::string names;
      for (const auto& f : theirs) names += (names.empty() ? "" : ", ") + f;
      throw InputError("run.output: '" + output_ + "' holds " + names + " that no nnvmc run wrote, and a run writes " +
                       (theirs.size() == 1 ? "a file of that name" : "files of those names") +
                       " there; choose another run.output (a new or empty directory), or move " +
                       (theirs.size() == 1 ? "it" : "them") + " away");
    }
  if (has_run && !setup_.config.run.overwrite)
    throw InputError("run.output: '" + output_ + "' already holds a run (" +
                     (fs::exists(out / "checkpoint.h5", ec)         ? std::string("checkpoint.h5")
                      : fs::exists(out / kOlderCheckpointName, ec) ? std::string(kOlderCheckpointName)
                                                                   : std::string("summary.json")) +
                     "); continue it with '" + parallel::launch_prefix(parallel::world().size()) + "nnvmc train --resume " + output_ +
                     "', choose another run.output, or start over with --force (run.overwrite=true)");
  if (has_run) {
    // Starting over: the previous run is kept as *.previous until this one has written its
    // first checkpoint, so a start that fails (a bad value found late) loses nothing.
    for (const char* f : kPreviousRunFiles) {
      if (!fs::exists(out / f, ec)) continue;
      fs::rename(out / f, out / (std::string(f) + ".previous"), ec);
      if (ec) throw InputError("run.output: cannot move " + (out / f).string() + " aside: " + ec.message());
    }
    log::info("--force: the previous run in " + output_ + " is kept as *.previous until this run's first checkpoint");
  }
  // nothing of an earlier run or start may survive to be mixed with this one
  for (const char* f : kPreviousRunFiles) fs::remove(out / f, ec);
  for (const char* f : {"checkpoint.h5.tmp", "config.yaml.tmp", "summary.json.tmp"}) fs::remove(out / f, ec);
}

void Trainer::init_output(bool resume) {
  // Every rank has passed its own checks (basis sets, init_from, budgets) before rank 0 writes:
  // a rank that failed them ends the job (MPI_Abort) while the others wait here.
  parallel::world().barrier();
  if (!writes_output()) return;  // rank 0 writes the run's files
  // One process per output directory: locked before anything in it is moved or written.
  io::CreatedDirectories made_dirs;
  {
    // The files a run writes ("checkpoint.h5.previous", "result.h5.damaged.2", each beside a
    // ".tmp") must fit the system's path limit: a run.output of ~4080 characters trained and
    // then failed to write its files (exit 1, as if the disk had refused them).
    constexpr std::size_t kLongestFileName = 32;
    std::error_code ec;
    const std::string absolute = fs::absolute(output_, ec).lexically_normal().string();
    if (absolute.size() + 1 + kLongestFileName >= static_cast<std::size_t>(PATH_MAX))
      throw InputError(strfmt("run.output: the path is %zu characters long, and the files written in it would pass "
                              "the system's limit of %d characters for a path: choose a shorter run.output",
                              absolute.size(), PATH_MAX - 1));
  }
  if (io::is_filesystem_root(output_))
    throw InputError("run.output: '" + output_ + "' is the filesystem's root directory; choose a directory of the run's own");
  if (!resume) {
    std::error_code ec;
    if (fs::exists(output_, ec) && !fs::is_directory(output_, ec))
      throw InputError("run.output: '" + output_ + "' exists and is not a directory");
    made_dirs = io::CreatedDirectories::create(output_, ec);
    if (ec) throw InputError("run.output: cannot create directory '" + output_ + "': " + ec.message());
  }
  try {
    lock_ = io::DirectoryLock(output_, "run.output");
  } catch (...) {  // (refused: the directories this start made go again)
    made_dirs.remove_if_empty();
    throw;
  }
  stop_file_ = StopFileWatch((fs::path(output_) / kStopFileName).string());  // (rank 0's, under the lock)
  if (!resume) unfinished_.made_dirs = made_dirs, unfinished_.made_lock_file = lock_.created();
  if (!resume) prepare_new_output();
  const std::string path = output_ + "/result.h5";
  // A resumed run appends to result.h5: one it may not write is refused before anything changes
  // (it used to fail to open, be taken for a damaged file, and be set aside with its history).
  if (resume && ::access(path.c_str(), F_OK) == 0 && ::access(path.c_str(), W_OK) != 0) {
    const int e = errno;
    throw InputError("run.output: cannot write to '" + path + "': " + std::strerror(e));
  }
  if (resume) {
    check_run_id(path);
    // One that another program has open (h5py) cannot be appended to: refused now, before
    // anything changes (it was taken for a damaged file and set aside with its history).
    if (::access(path.c_str(), F_OK) == 0) try {
        io::H5File probe(path, io::H5File::Mode::append);
      } catch (const CheckpointError&) {  // damaged: set aside at the first write
      }
    if (::access(output_.c_str(), W_OK) != 0) {  // (config.yaml is written at the first write)
      const int e = errno;
      throw InputError("run.output: cannot write to '" + output_ + "': " + std::strerror(e));
    }
    resume_open_pending_ = true;
    resume_settle_pending_ = true;
    return;
  }
  unfinished_.dir = output_;  // from here on, a start that ends early takes its files back
  try {
    io::write_text_atomically(output_ + "/config.yaml", std::string(io::kRunConfigHeader) + "\n" + to_yaml(setup_.config));
  } catch (const WriteError& e) {
    throw InputError(std::string("run.output: cannot write to '") + output_ + "': " + e.what());
  }
  io::H5File results(path, io::H5File::Mode::truncate);
  results.set_attr("run_id", run_id_);
  results.set_attr("units", kResultUnits);
}

Trainer::UnfinishedStart::~UnfinishedStart() {
  if (dir.empty()) return;
  try {  // (a destructor, maybe during unwinding: nothing may escape)
    std::error_code ec;
    const fs::path out(dir);
    for (const char* f : kPreviousRunFiles) fs::remove(out / f, ec);  // this start's config.yaml, result.h5
    for (const char* f : {"checkpoint.h5.tmp", "config.yaml.tmp", "summary.json.tmp"}) fs::remove(out / f, ec);
    int restored = 0, kept = 0;
    for (const char* f : kPreviousRunFiles) {
      const fs::path aside = out / (std::string(f) + ".previous");
      if (!fs::exists(aside, ec)) continue;
      fs::rename(aside, out / f, ec);
      ++(ec ? kept : restored);
    }
    // The directory as it was: the lock file and the directory go too when this start made them
    // (the lock is still held: UnfinishedStart ends before lock_).
    if (made_lock_file) fs::remove(out / io::kLockFileName, ec);
    if (restored + kept == 0) made_dirs.remove_if_empty();
    const bool removed_dir = !made_dirs.made.empty() && !fs::exists(out, ec);
    if (kept > 0)
      log::warn("the run stopped before its first checkpoint; the run it was to replace (--force) could not be put "
                "back entirely: rename its *.previous files in " + dir + " back by hand");
    else if (restored > 0)
      log::warn("the run stopped before its first checkpoint: the run it was to replace (--force) is back in " + dir);
    else if (removed_dir)
      log::warn("the run stopped before its first checkpoint: nothing to resume, the directory it made (" + dir +
                ") is removed");
    else
      log::warn("the run stopped before its first checkpoint: nothing to resume, its files in " + dir + " are removed");
  } catch (...) {
  }
}

void Trainer::settle_resumed_output() {
  if (!resume_settle_pending_ || !writes_output()) return;
  resume_settle_pending_ = false;
  // Removals first: they work on a full disk, where config.yaml's write may not, and a summary of
  // the previous checkpoint beside the new one would describe a state the run has left.
  io::remove_quietly(output_ + "/summary.json");  // describes the evaluation removed below
  io::remove_quietly(output_ + "/" + io::kProfileScratchMarker);  // a continued scratch run is the user's
  // A resume that trains nothing writes the checkpoint's settings: the checkpoint, unchanged, was
  // trained with them (it wrote the new ones, and every later resume warned that config.yaml
  // differed from the checkpoint, a user audit; a later training resume ran with the old ones)
  try {
    io::write_text_atomically(output_ + "/config.yaml", std::string(io::kRunConfigHeader) + "\n" + to_yaml(evaluation_only_ ? checkpoint_config_ : setup_.config));
  } catch (const WriteError& e) {
    throw WriteError(std::string("run.output: cannot write to '") + output_ + "': " + e.what());
  }
  io::H5File& results = *open_results();
  results.remove("eval");  // this run evaluates again when it ends
  results.flush();
}

io::H5File* Trainer::open_results() {
  if (!writes_output()) return nullptr;
  if (results_) return &*results_;
  const std::string path = output_ + "/result.h5";
  if (!resume_open_pending_) return &results_.emplace(path, io::H5File::Mode::append);
  resume_open_pending_ = false;
  auto& opened = results_;
  std::uintmax_t own_size = 0;  // (a file extended to its recorded end: its size before)
  try {
    try {
      opened.emplace(path, io::H5File::Mode::append);
    } catch (const CheckpointError&) {
      // A write refused by a file-size limit leaves the file shorter than the end its superblock
      // records, which HDF5 refuses whole: extended to that end, its rows are read again (and
      // its run id checked, which could not be read before); one that still cannot be read goes
      // back to its own bytes before it is set aside.
      std::error_code ec;
      const auto size = fs::file_size(path, ec);
      if (ec || !io::repair_truncated_hdf5(path)) throw;
      try {
        check_run_id(path);
        opened.emplace(path, io::H5File::Mode::append);
      } catch (const CheckpointError&) {
        fs::resize_file(path, size, ec);
        throw;
      }
      log::warn(path + ": ended before its recorded end (a write that failed); extended to it and read again");
      own_size = size;
    }
    io::H5File& results = *opened;
    // Every dataset is read once before anything is written: a file cut short (and extended back
    // to its recorded end above) can open and list nothing, and the resume wrote into it a file
    // no reader could open (a user audit); one that cannot be read is set aside below, as it was.
    results.verify_readable();
    // Every series is made consistent with the checkpoint we resume from: training rows written
    // after it are dropped (the chain repeats them), and pretraining (before iteration 0 of every
    // checkpoint of the run) keeps its one row per series. (The evaluation that followed the end
    // of the previous run goes when this run's state moves on: settle_resumed_output.)
    for (const auto& col : results.list("train")) results.truncate("train/" + col, iteration_);
    if (setup_.config.pretrain.steps > 0)
      for (const auto& col : results.list("pretrain")) results.truncate("pretrain/" + col, 1);
    else
      results.remove("pretrain");
    pad_train_series(results);  // a damaged file can open and fail only here
    try {
      results.set_attr("run_id", run_id_);  // (result.h5 of a run from before run ids: it has one now)
      if (!results.has_attr("units")) results.set_attr("units", kResultUnits);  // (a run from before units)
    } catch (const WriteError& e) {  // (an attribute a damaged file cannot take: damage, as before)
      throw CheckpointError(e.what());
    }
    results.flush();
  } catch (const CheckpointError& e) {
    // A process killed while writing result.h5 can leave it unreadable; the checkpoint is what
    // the chain continues from, so the run goes on with a new file and keeps the old one aside.
    results_.reset();
    std::error_code ec;
    if (own_size > 0) fs::resize_file(path, own_size, ec);  // (set aside with its own bytes)
    std::string aside = path + ".damaged";  // (an earlier one is not replaced: it may hold the only rows)
    for (int k = 2; fs::exists(aside, ec); ++k) aside = path + ".damaged." + std::to_string(k);
    fs::rename(path, aside, ec);
    log::warn(strfmt("%s; kept as %s, continuing in a new result.h5 from iteration %ld "
                     "(its earlier training rows are NaN; the pretraining series are not in it)", e.what(),
                     fs::path(aside).filename().c_str(), static_cast<long>(iteration_)));
    io::H5File& results = results_.emplace(path, io::H5File::Mode::truncate);
    results.set_attr("run_id", run_id_);
    results.set_attr("units", kResultUnits);
    pad_train_series(results);
    results.flush();
  } catch (...) {
    results_.reset();  // (a write refused: the error stops the run, whose next resume cuts the file back again)
    throw;
  }
  return &*results_;
}

void Trainer::check_run_id(const std::string& path) {
  std::string theirs;
  bool foreign = false;  // an HDF5 file no run writes as its result.h5 (it was taken over and written into)
  try {
    const io::H5File results(path, io::H5File::Mode::read);
    if (results.has_attr("run_id")) theirs = results.attr("run_id");
    foreign = results.has_attr("format") ||  // (a checkpoint's mark)
              (theirs.empty() && !results.exists("train") && !results.exists("pretrain") && !results.exists("eval") &&
               !results.list("/").empty());
  } catch (const CheckpointError&) {
    // missing or damaged: init_output starts a new one
  }
  if (foreign)
    throw InputError("--resume " + output_ + ": result.h5 there is not a run's results file (no run id, no train/ "
                     "series); move it away to continue the run with a new one");
  // A checkpoint from before run ids takes result.h5's, if an earlier resume gave it one (and
  // died before its first checkpoint): drawing another would refuse every later resume.
  if (run_id_.empty()) {
    run_id_ = theirs.empty() ? new_run_id() : theirs;
    return;
  }
  if (!theirs.empty() && theirs != run_id_)
    throw InputError("--resume " + output_ + ": checkpoint.h5 and result.h5 there belong to different runs (run ids " +
                     run_id_ + " and " + theirs + "; a checkpoint copied from another run?): resume each run in its "
                     "own directory, or start from these parameters with model.init_from");
}

void Trainer::pad_train_series(io::H5File& results) const {
  // Rows a failed write left out (or a new file replacing a damaged one) are NaN, so row t of
  // every series stays iteration t + 1.
  std::vector<std::string> columns;
  for (const char* c : kRunSeries) columns.push_back(std::string("train/") + c);
  for (const auto& m : setup_.molecules)
    for (const char* c : kMoleculeSeries) columns.push_back("train/" + m.name() + "/" + c);
  // An iteration whose write failed has its row in the series appended before the failure
  // only (the one that failed may read back as zeros after repair_truncated_hdf5): every series
  // is cut back to the rows all of them have (series absent from files of earlier versions not
  // counted), and padded with NaN below.
  std::int64_t common = std::numeric_limits<std::int64_t>::max();
  for (const auto& col : columns)
    if (const std::int64_t n = results.rows(col); n > 0) common = std::min(common, n);
  for (const auto& col : columns)
    if (results.rows(col) > common) results.truncate(col, common);
  // A row takes a positive time: one with seconds = 0 read back from a repaired file's zeros.
  if (results.rows("train/seconds") > 0) {
    const io::Array seconds = results.read("train/seconds");
    const double* s = seconds.as<double>();
    std::int64_t cut = seconds.numel();
    for (std::int64_t i = 0; i < seconds.numel() && cut == seconds.numel(); ++i)
      if (s[i] == 0.0) cut = i;
    if (cut < seconds.numel()) {
      for (const auto& col : columns) results.truncate(col, std::min(results.rows(col), cut));
      log::warn(strfmt("result.h5: the rows from iteration %ld on were not written (a failed write); they are NaN",
                       static_cast<long>(cut + 1)));
    }
  }
  std::int64_t padded = 0;  // (iterations: the most rows any series lacks; the warning used to sum them)
  for (const auto& col : columns) {
    const std::int64_t missing = std::max<std::int64_t>(0, iteration_ - results.rows(col));
    results.append(col, std::vector<double>(static_cast<std::size_t>(missing), std::numeric_limits<double>::quiet_NaN()));
    padded = std::max(padded, missing);
  }
  if (padded > 0)
    log::warn(strfmt("result.h5: the training series lack %ld iteration(s) before iteration %ld (a failed write or a "
                     "new file); their rows are NaN", static_cast<long>(padded), static_cast<long>(iteration_)));
}

void Trainer::stop_after_failed_results_write(const std::string& why) {
  const std::string iteration = std::to_string(iteration_);
  try {
    write_checkpoint();
  } catch (const WriteError& e) {
    if (last_checkpoint_ == iteration_)  // written; what failed came after it (a resume's config.yaml)
      throw WriteError(why + "; training stopped at iteration " + iteration + " (" + e.what() + ")");
    throw WriteError(why + "; training stopped, and the checkpoint of iteration " + iteration +
                     " could not be written either (" + e.what() + "); the previous checkpoint, if any, is unchanged");
  }
  throw WriteError(why + "; training stopped at iteration " + iteration + ", whose checkpoint was written to " +
                   output_ + "/checkpoint.h5: free space, then '" + parallel::launch_prefix(parallel::world().size()) + "nnvmc train --resume " + output_ +
                   "' continues (rows that could not be written are NaN)");
}

namespace {
/// Checkpoint::history as a JSON array ("" is the empty one).
nlohmann::json history_array(const std::string& history) {
  return history.empty() ? nlohmann::json::array() : nlohmann::json::parse(history);
}
}  // namespace

void Trainer::record_resume_changes(const std::string& changes) {
  nlohmann::json h = history_array(history_);
  h.push_back({{"iteration", iteration_}, {"changes", changes}});
  history_ = h.dump();
}

namespace {
/// The step-size limit a failing natural-gradient run can tighten (0 means none: set one).
std::string norm_constraint_advice(const OptimOptions& o) {
  if (o.type == "adam") return "";
  const bool kfac = o.type == "kfac";
  const double limit = kfac ? o.kfac.norm_constraint : o.sr.norm_constraint;
  const std::string key = kfac ? "optim.kfac.norm_constraint" : "optim.sr.norm_constraint";
  return limit > 0 ? " or " + key : ", or set " + key + (kfac ? " (0: no limit; its default 1e-3)" : " (0: no limit; its default 1e-2)");
}
}  // namespace

Checkpoint Trainer::checkpoint() const {
  Checkpoint c;
  c.iteration = iteration_;
  c.trained_seconds = trained_seconds();
  c.config_yaml = to_yaml(setup_.config);
  c.run_id = run_id_;
  c.history = history_;
  for (const auto& m : setup_.molecules)
    c.molecules.push_back({m.system, m.sampler->global_state(), m.local_energy->method().rng_state()});  // all ranks' walkers
  c.parameters = module_state(*setup_.wf);
  c.frozen = setup_.wf->frozen_state();
  c.optimizer = optimizer_->state();
  return c;
}

void Trainer::write_checkpoint() {
  const Checkpoint c = checkpoint();  // gathers the walkers: called on every rank
  std::exception_ptr failed;
  if (writes_output()) {
    try {
      // The checkpoint being replaced stays as kOlderCheckpointName (a hard link, so no copy is
      // written; the run then holds two checkpoints on disk, three while a new one is written);
      // checkpoint.h5 itself is replaced atomically, so a crash anywhere leaves both readable.
      // One of the same iteration (the end's after the interval's) keeps the older one.
      if (c.iteration != last_checkpoint_) {
        std::error_code ec;
        const fs::path latest = fs::path(output_) / "checkpoint.h5", older = fs::path(output_) / kOlderCheckpointName;
        fs::remove(older, ec);
        if (fs::exists(latest, ec)) {
          fs::create_hard_link(latest, older, ec);
          static bool said = false;  // (once per process: the file system does not change)
          if (ec && !said) {
            said = true;
            log::warn("checkpoint: the one before the latest cannot be kept as " + std::string(kOlderCheckpointName) +
                      " (" + ec.message() + "; hard links unsupported here?): a damaged checkpoint.h5 would end the run");
          }
        }
      }
      save_checkpoint(output_ + "/checkpoint.h5", c);
      last_checkpoint_ = c.iteration;
      settle_resumed_output();  // (a failure here is reported with the checkpoint kept, below)
      unfinished_.dir.clear();  // a run that can be continued (with its pretraining and burn-in, at iteration 0)
      if (!previous_run_cleared_) {
        previous_run_cleared_ = true;  // this run can now be continued: the one it replaced (--force) goes
        std::error_code ec;
        for (const char* f : kPreviousRunFiles) fs::remove(fs::path(output_) / (std::string(f) + ".previous"), ec);
        // and so does the mark of a profile's scratch run it replaced or continues: a later
        // profile would replace this run (a profile marks its own runs after they end)
        fs::remove(fs::path(output_) / io::kProfileScratchMarker, ec);
      }
    } catch (...) {
      failed = std::current_exception();
    }
  }
  // Collective: the other ranks wait until rank 0's checkpoint is in place, and share its
  // failure. They returned at once, and an interrupted run's ranks then stopped the job (MPI
  // abort) while rank 0 was still writing: a user audit lost every 158 MB checkpoint of a
  // two-rank Ctrl-C that way, leaving only checkpoint.h5.tmp.
  if (max_over_ranks(failed ? 1 : 0) == 0) return;
  if (failed) {
    if (last_checkpoint_ < 0) std::rethrow_exception(failed);
    try {  // say which checkpoint is there to resume (a user audit: only result.h5's failure said it)
      std::rethrow_exception(failed);
    } catch (const WriteError& e) {
      throw WriteError(strfmt("%s; the last checkpoint, of iteration %ld, is kept in %s/checkpoint.h5", e.what(),
                              static_cast<long>(last_checkpoint_), output_.c_str()));
    }
  }
  // The other ranks wait for rank 0 to report its own error and end the job (MPI abort), after it
  // has put back what a --force start set aside; reporting at once, they stopped it midway with a
  // message that was not the cause.
  parallel::world().barrier();
  throw WriteError("rank 0 could not write the checkpoint");
}

double Trainer::trained_seconds() const { return trained_before_ + (loop_started_ ? now() - start_time_ : 0.0); }

/// What an iteration measured for one molecule of its batch.
struct Trainer::MoleculeStep {
  std::size_t index = 0;        ///< molecule of the setup
  double acceptance = 0;        ///< MH acceptance of this iteration's steps
  torch::Tensor e;              ///< [b'] this rank's finite local energies, used in the step
  torch::Tensor e_all;          ///< [B'] finite local energies of all ranks' walkers
  std::int64_t excluded = 0;    ///< walkers left out (non-finite E_L)
  double energy = 0, variance = 0, error = 0;
};

void Trainer::log_progress(std::int64_t t, const std::vector<MoleculeStep>& steps) {
  const double elapsed = now() - start_time_;
  const double done = static_cast<double>(t + 1 - first_iteration_);
  const double rate = done / std::max(elapsed, 1e-9);
  double left = (setup_.config.optim.iterations - (t + 1)) / std::max(rate, 1e-9);
  bool by_minutes = false;  // whichever of the two budgets ends training first (said when it is the
                            // minutes: "it 50/3000" read as a total that was never reached, a user audit)
  if (setup_.config.optim.minutes > 0)
    if (const double m = std::max(0.0, setup_.config.optim.minutes * 60.0 - trained_seconds()); m < left) {
      left = m;
      by_minutes = true;
    }
  const std::string eta = fmt_duration(left) + (by_minutes ? " (optim.minutes)" : "");
  const auto line = [&](const MoleculeStep& m) {
    return strfmt("E %.6f ± %.6f  var %.4g  acc %.2f  step %.3f", m.energy, m.error, m.variance, m.acceptance,
                  setup_.molecules[m.index].sampler->step_size());
  };
  if (setup_.molecules.size() == 1) {
    log::info(strfmt("it %6ld/%d  %s  %.2f it/s  ETA %s", static_cast<long>(t + 1), setup_.config.optim.iterations,
                     line(steps.front()).c_str(), rate, eta.c_str()));
    return;
  }
  double mean = 0;
  for (const auto& m : steps) mean += m.energy / static_cast<double>(steps.size());
  log::info(strfmt("it %6ld/%d  %zu of %zu molecules  mean E %.6f  %.2f it/s  ETA %s", static_cast<long>(t + 1),
                   setup_.config.optim.iterations, steps.size(), setup_.molecules.size(), mean, rate, eta.c_str()));
  std::size_t width = 0;
  for (const auto& m : steps) width = std::max(width, setup_.molecules[m.index].name().size());
  for (const auto& m : steps)
    log::info(strfmt("    %-*s  %s", static_cast<int>(width), setup_.molecules[m.index].name().c_str(), line(m).c_str()));
}

void Trainer::burn_in(int burn_in_steps) {
  // In blocks of steps_per_iteration, adapting each molecule's step size after each block.
  const int block = std::max(1, setup_.config.sampler.steps_per_iteration);
  auto scope = timers_.scope("sampling");
  start_burn_in_.assign(setup_.molecules.size(), 0);
  for (size_t i = 0; i < setup_.molecules.size(); ++i) {
    int steps = burn_in_steps;
    // A run that trains nothing (optim.iterations = 0: a baseline, a pretrained state) measures,
    // and checkpoints, the walkers placed around the nuclei: they get what fresh walkers need
    // (heavy atoms: ~Z² steps; Ar measured 0.6-0.8 Eh high after 100, a user audit)
    if (setup_.config.optim.iterations == 0 && steps < fresh_walkers_burn_in(setup_.molecules[i].system)) {
      steps = fresh_walkers_burn_in(setup_.molecules[i].system);
      log::info(strfmt("%s: no iteration to train, so the walkers placed at the start get a burn-in of %d steps "
                       "(20 Z_max^2, at least %d; sampler.burn_in = %d) before they are measured",
                       setup_.molecules[i].name().c_str(), steps, kMinFreshWalkersBurnIn, burn_in_steps));
    }
    const auto logabs = setup_.logabs_fn(i);
    auto& sampler = *setup_.molecules[i].sampler;
    const auto key = setup_.graph_key(i);
    for (int done = 0; done < steps; done += block) {
      throw_if_stop_requested_on_any_rank("the burn-in (before its first checkpoint: nothing of this start to resume)");
      sampler.adapt(sampler.run(logabs, std::min(block, steps - done), key));
    }
    start_burn_in_[i] = steps;
  }
}

TrainOutcome Trainer::run(bool final_eval) {
  auto& cfg = setup_.config;
  auto& mols = setup_.molecules;
  const std::size_t n_mol = mols.size();
  std::vector<LogAbsFn> logabs;
  for (size_t i = 0; i < n_mol; ++i) logabs.push_back(setup_.logabs_fn(i));
  const auto batch_at = [&](std::int64_t t) {
    return molecules_for_iteration(n_mol, cfg.optim.molecules_per_step, cfg.run.seed, t);
  };
  struct CloseResults {  // result.h5 is closed when run() ends, however it ends
    std::optional<io::H5File>& file;
    ~CloseResults() { file.reset(); }
  } close_results{results_};
  TrainOutcome out;
  if (iteration_ == 0 && !resumed_) burn_in(cfg.sampler.burn_in);
  const std::int64_t first = iteration_;
  first_iteration_ = first;
  start_time_ = now();
  loop_started_ = true;
  const double budget_seconds = cfg.optim.minutes * 60.0;  // 0: no wall-time budget
  double iter_start = start_time_;
  int consecutive_failures = 0;
  // The last accepted iteration's energy and its error, and its molecules (those of the batch with
  // molecules_per_step), for a stop's message; NaN before the first
  double last_energy = std::numeric_limits<double>::quiet_NaN(), last_error = 0;
  std::vector<std::size_t> last_batch;
  bool finished_early = false;
  std::string results_failure;  // rank 0: why result.h5 could not be written (training then stops)
  for (std::int64_t t = first; t < cfg.optim.iterations;) {
    // All ranks act on the same answer (a signal or a wall-time hook may reach one rank first).
    int asked = static_cast<int>(hook_ ? hook_(t) : StopAction::none);
    if (budget_seconds > 0 && trained_seconds() >= budget_seconds)
      asked = std::max(asked, static_cast<int>(StopAction::finish));
    // A file named kStopFileName in the run directory asks for the same stop as Ctrl-C, from
    // anywhere (a batch job, or under mpirun, whose Ctrl-C killed a large model's ranks before
    // their checkpoint was written: a user audit); rank 0 watches it (stop_file_).
    const int stop_code =
        max_over_ranks(asked + (stop_requested() || take_stop_file() ? 8 : 0) + (results_failure.empty() ? 0 : 16));
    if ((stop_code & 16) != 0) stop_after_failed_results_write(root_text(results_failure));
    const StopAction action = static_cast<StopAction>(stop_code & 7);
    const bool stop = (stop_code & 8) != 0;
    if (action == StopAction::finish) {
      finished_early = true;
      stopped_by_ = "optim.minutes";  // (the one source of a finish: any rank's clock reached the budget)
      if (budget_seconds > 0)  // (the clock of some rank: no hook asks to finish)
        log::info(strfmt("optim.minutes = %g reached after %ld of %d iterations: training ends here",
                         cfg.optim.minutes, static_cast<long>(t), cfg.optim.iterations));
      break;
    }
    if (stop || action == StopAction::interrupt) {
      if (t == first && resumed_) {  // nothing new since the checkpoint: the run's files stay as they were
        log::warn("stop requested before the first iteration of this resume: its checkpoint is unchanged");
        throw Interrupted("stopped before the first training iteration of the resume");
      }
      log::warn(strfmt("stop requested: writing checkpoint at iteration %ld", static_cast<long>(iteration_)));
      write_checkpoint();
      out.interrupted = true;
      out.iterations = iteration_;
      return out;
    }
    const std::vector<std::size_t> batch = batch_at(t);
    // A molecule left out of the previous iteration holds log|ψ| of older parameters (a function
    // of the schedule alone, so a resumed run refreshes the same molecules).
    if (t > 0 && batch.size() < n_mol) {
      const auto previous = batch_at(t - 1);
      auto scope = timers_.scope("sampling");
      for (std::size_t i : batch)
        if (!std::binary_search(previous.begin(), previous.end(), i)) mols[i].sampler->refresh(logabs[i]);
    }
    const TensorMap good_params = module_state(*setup_.wf);
    const TensorMap good_optimizer = cloned(optimizer_->state());
    std::vector<SamplerState> good_samplers;
    for (std::size_t i : batch) good_samplers.push_back(mols[i].sampler->state());
    std::vector<MoleculeStep> steps;
    {
      auto scope = timers_.scope("sampling");
      for (std::size_t i : batch) {
        MoleculeStep m;
        m.index = i;
        m.acceptance = mols[i].sampler->run(logabs[i], cfg.sampler.steps_per_iteration, setup_.graph_key(i));
        mols[i].sampler->adapt(m.acceptance);
        steps.push_back(std::move(m));
      }
    }
    {
      auto scope = timers_.scope("local_energy");
      for (auto& m : steps)
        m.e = (*mols[m.index].local_energy)(*setup_.wf, mols[m.index].sampler->positions(), setup_.graph_key(m.index))
                  .energy;
    }
    // Walkers with a non-finite local energy (e.g. on a node) are left out of this step (one
    // host read per molecule); one fused check of energies and parameters follows the step.
    // With several ranks, every rank decides from the energies of all walkers (so all ranks
    // take the same branch); the optimizer gets this rank's walkers.
    bool ok = true;
    std::string why;
    std::vector<WalkerBatch> walker_batches;
    for (auto& m : steps) {
      if (energy_hook_) energy_hook_(t, m.e);
      std::int64_t offset = 0;
      m.e_all = all_walkers(m.e, &offset);
      const FiniteWalkers finite = finite_walkers(m.e_all, parallel::world().size());
      m.excluded = finite.excluded;
      if (!finite.ok) {
        ok = false;
        why = strfmt("%ld of %ld local energies of %s non-finite%s", static_cast<long>(finite.excluded),
                     static_cast<long>(m.e_all.size(0)), mols[m.index].name().c_str(),
                     finite.empty_rank >= 0 ? strfmt(", all walkers of rank %d", finite.empty_rank).c_str() : "");
        continue;
      }
      torch::Tensor r = mols[m.index].sampler->positions();
      if (finite.excluded > 0) {
        const auto mine = own_rows(finite.mask, offset, m.e.size(0));
        r = r.index({mine});
        m.e = m.e.index({mine});
        m.e_all = m.e_all.index({finite.mask});
      }
      walker_batches.push_back(WalkerBatch{&mols[m.index].tensors, r, m.e});
    }
    if (ok) {
      ok = optimizer_->step(*setup_.wf, walker_batches, t, timers_);
      if (!ok) why = "non-finite gradient or parameters";
    }
    if (ok) {
      // The new parameters must also give a finite log|ψ| at the walkers: a step can leave every
      // parameter finite and still overflow the wavefunction (e.g. optim.lr far too large), and
      // walkers holding such values are no state to continue from or to checkpoint.
      {
        auto scope = timers_.scope("sampling");
        for (std::size_t i : batch) mols[i].sampler->refresh(logabs[i]);  // parameters changed: log|ψ| of the walkers
      }
      std::vector<torch::Tensor> checked = setup_.wf->parameters();
      for (const auto& m : steps) checked.push_back(m.e_all);
      for (std::size_t i : batch) checked.push_back(mols[i].sampler->logabs());  // this rank's walkers
      ok = !max_over_ranks(all_finite(checked) ? 0 : 1);  // every rank takes the same branch
      if (!ok) why = "non-finite gradient, parameters or log|psi| after the step";
    }
    if (!ok) {
      // Back to the last good parameters, optimizer state and walkers, but NOT the samplers'
      // random streams: the retry draws new moves (deterministically, so a resumed run repeats
      // it exactly) instead of replaying the failure.
      ++consecutive_failures;
      ++out.failed_steps;
      load_module_state(*setup_.wf, good_params);
      optimizer_->load_state(good_optimizer);
      for (std::size_t k = 0; k < batch.size(); ++k) {
        auto& sampler = *mols[batch[k]].sampler;
        SamplerState retry = good_samplers[k];
        retry.rng_state = sampler.state().rng_state;
        sampler.set_state(retry);
      }
      log::warn(strfmt("iteration %ld: %s; step rejected, last good state restored (%d consecutive)",
                       static_cast<long>(t + 1), why.c_str(), consecutive_failures));
      if (consecutive_failures >= cfg.optim.max_consecutive_failures) {
        // The last good state is checkpointed when it is new: a resume that trained nothing leaves
        // its run as it was (it cut a finished run's evaluation away), and a new run that trained
        // nothing keeps its pretraining and burn-in at iteration 0, unless it was to replace a run
        // (--force): that one is put back (UnfinishedStart).
        const bool set_aside = writes_output() && holds_set_aside_run(output_);
        const bool keep = iteration_ > first || (!resumed_ && max_over_ranks(set_aside ? 1 : 0) == 0);
        if (keep) write_checkpoint();
        std::string last_accepted;
        if (std::isfinite(last_energy)) {
          // (with molecules_per_step, which molecules: batches differ in energy)
          std::string which;
          if (last_batch.size() < n_mol)
            for (std::size_t i : last_batch) which += (which.empty() ? " of " : ", ") + mols[i].name();
          last_accepted = strfmt("E %.6g +- %.2g Eh%s before its update", last_energy, last_error, which.c_str());
        }
        const std::string kept =
            keep ? strfmt("the last good state (iteration %ld%s) is in %s/checkpoint.h5%s", static_cast<long>(iteration_),
                          last_accepted.empty() ? "" : (", whose step measured " + last_accepted).c_str(),
                          output_.c_str(),
                          last_accepted.empty() ? ""
                                                : " (if that energy is far from the same molecules' earlier ones, "
                                                  "the state was damaged before the failures began: start the run "
                                                  "again instead of resuming it)")
            : resumed_ ? strfmt("the run's checkpoint (iteration %ld) and files are as they were",
                                static_cast<long>(iteration_))
                       : std::string("no iteration was trained, and the run --force set aside is put back");
        throw NumericalError(strfmt(
            "training stopped: %d consecutive iterations failed (%s) at iteration %ld "
            "(optim.max_consecutive_failures); %s. Try a smaller optim.lr%s, or another seed",
            consecutive_failures, why.c_str(), static_cast<long>(t + 1), kept.c_str(),
            norm_constraint_advice(cfg.optim).c_str()));
      }
      continue;
    }
    consecutive_failures = 0;
    for (const auto& m : steps) {
      out.excluded_walkers += m.excluded;
      if (m.excluded > 0)
        log::warn(strfmt("iteration %ld: %ld walker(s) of %s with a non-finite local energy left out",
                         static_cast<long>(t + 1), static_cast<long>(m.excluded), mols[m.index].name().c_str()));
    }
    auto bookkeeping = timers_.scope("bookkeeping");  // results, progress line, checkpoint: to the end
    open_results();  // (a resume's files are cut back to iteration_, the checkpoint's: before it moves on)
    iteration_ = t + 1;
    // (a start stays unfinished until its first checkpoint: one that trained but could not write
    // it, on a full disk, took its files back and left the run it replaced set aside)
    // Run-level series: means over the iteration's molecules (for one molecule, its values);
    // per-molecule series in train/<name>/, NaN where a molecule was not in the batch.
    double energy = 0, var = 0, acc = 0, step = 0, excluded = 0;
    const double per = 1.0 / static_cast<double>(steps.size());
    std::vector<const MoleculeStep*> of(n_mol, nullptr);
    for (auto& m : steps) {
      const auto e64 = m.e_all.detach().to(torch::kFloat64).cpu();  // the molecule's one device-to-host copy
      const auto mean = e64.mean();  // on the host: read below without a sync
      const auto stats = torch::stack({mean, (e64 - mean).square().sum() / std::max<int64_t>(1, e64.numel() - 1)});
      m.energy = stats.data_ptr<double>()[0];
      m.variance = stats.data_ptr<double>()[1];
      m.error = std::sqrt(m.variance / static_cast<double>(e64.numel()));
      stop_if_diverged(mols[m.index], m.energy, m.error, t + 1);
      energy += per * m.energy;
      var += per * m.variance;
      acc += per * m.acceptance;
      step += per * mols[m.index].sampler->step_size();
      excluded += static_cast<double>(m.excluded);
      of[m.index] = &m;
    }
    {
      double error2 = 0;  // of the mean over the iteration's molecules
      for (const auto& m : steps) error2 += per * per * m.error * m.error;
      last_energy = energy;
      last_error = std::sqrt(error2);
      last_batch = batch;
    }
    const double t_now = now();
    if (results_) try {
        const double run_row[] = {energy, var, acc, step, optimizer_->applied_learning_rate(t), excluded, t_now - iter_start};
        for (std::size_t c = 0; c < std::size(kRunSeries); ++c)
          results_->append(std::string("train/") + kRunSeries[c], run_row[c]);
        for (std::size_t i = 0; i < n_mol; ++i) {
          const MoleculeStep* m = of[i];
          const double nan = std::numeric_limits<double>::quiet_NaN();
          const double row[] = {m ? m->energy : nan, m ? m->variance : nan, m ? m->acceptance : nan,
                                mols[i].sampler->step_size(), m ? static_cast<double>(m->excluded) : nan};
          for (std::size_t c = 0; c < std::size(kMoleculeSeries); ++c)
            results_->append("train/" + mols[i].name() + "/" + kMoleculeSeries[c], row[c]);
        }
        results_->flush();
      } catch (const Error& e) {  // disk full, file-size limit: stop at the next iteration's check, checkpointed
        results_failure = e.what();
      }
    iter_start = t_now;
    if ((t + 1) % cfg.optim.log_every == 0 || t + 1 == cfg.optim.iterations) log_progress(t, steps);
    if (cfg.run.checkpoint_every > 0 && (t + 1) % cfg.run.checkpoint_every == 0) write_checkpoint();
    ++t;
  }
  if (max_over_ranks(results_failure.empty() ? 0 : 1) > 0) stop_after_failed_results_write(root_text(results_failure));
  if (hook_ && !finished_early) hook_(cfg.optim.iterations);
  trained_before_ = trained_seconds();  // the training clock stops here (the evaluation is not training)
  loop_started_ = false;
  // (a resume with nothing to train keeps its checkpoint, and its files until the evaluation is written)
  if (iteration_ > first || !resumed_) write_checkpoint();
  evaluation_only_ = resumed_ && iteration_ == first;
  out.iterations = iteration_;
  if (out.failed_steps > 0 || out.excluded_walkers > 0)
    log::warn(strfmt("training: %ld step(s) rejected and retried, %ld walker sample(s) left out",
                     static_cast<long>(out.failed_steps), static_cast<long>(out.excluded_walkers)));
  const std::string trained_state = "the trained state (iteration " + std::to_string(iteration_) + ") is in " +
                                    output_ + "/checkpoint.h5: 'nnvmc eval " + output_ + "/checkpoint.h5' measures it";
  try {
    if (final_eval && cfg.eval.steps > 0) {
      // A signal in the last iteration or its checkpoint: trained and checkpointed, not evaluated
      // (it was reported as a stop "during the evaluation's burn-in").
      throw_if_stop_requested_on_any_rank("the end of training (the final evaluation was not begun)");
      final_evaluation(out, [&]() -> io::H5File* {
        io::H5File* results = open_results();
        settle_resumed_output();  // (a resume that trained nothing: its earlier evaluation goes now)
        return results;
      });
    } else if (final_eval) {
      log::info("eval.steps = 0: no final evaluation and no summary.json; " + trained_state);
    }
    if (results_) results_->flush();  // a failed write is an error here, not a silent close
  } catch (const Interrupted& e) {
    throw Interrupted(std::string(e.what()) + "; " + trained_state);
  } catch (const WriteError& e) {
    // an evaluation that was measured but not written is still said (a user audit: stdout was empty)
    std::string measured;
    for (std::size_t i = 0; i < out.evals.size() && i < setup_.molecules.size(); ++i)
      measured += strfmt("%s%s%.6f +- %.6f Eh", measured.empty() ? "; the final evaluation, not written: " : ", ",
                         setup_.molecules.size() > 1 ? (setup_.molecules[i].name() + " ").c_str() : "E = ",
                         out.evals[i].stats.mean, out.evals[i].stats.error);
    throw WriteError(std::string(e.what()) + measured + "; " + trained_state);
  }
  return out;
}

void Trainer::final_evaluation(TrainOutcome& out, const std::function<io::H5File*()>& results_to_write) {
  const auto& cfg = setup_.config;
  auto& mols = setup_.molecules;
  std::vector<double> mean_series(static_cast<std::size_t>(cfg.eval.steps), 0.0);
  for (std::size_t i = 0; i < mols.size(); ++i) {
    log::info(strfmt("evaluating%s%s: %d steps x %d walkers", mols.size() > 1 ? " " : "",
                     mols.size() > 1 ? mols[i].name().c_str() : "", cfg.eval.steps, cfg.sampler.walkers));
    out.evals.push_back(evaluate(setup_, cfg.eval, timers_, {}, i));
    if (iteration_ == 0 && i < start_burn_in_.size()) {  // (nothing trained: the start's walkers, burnt in)
      out.evals.back().burn_in += start_burn_in_[i];      // (a false "short burn-in" said 0 steps, a user audit)
      out.evals.back().fresh_walkers = true;
    }
    const auto& series = out.evals.back().series;
    for (std::size_t k = 0; k < series.size() && k < mean_series.size(); ++k)
      mean_series[k] += series[k] / static_cast<double>(mols.size());
  }
  // A final energy above the pretraining target's Hartree–Fock energy (already a small basis's,
  // so above the true HF energy) is a wavefunction worse than the Slater determinant it started from.
  const auto e_hf = hartree_fock_energies();
  for (std::size_t i = 0; i < mols.size() && i < e_hf.size(); ++i) {
    const auto& st = out.evals[i].stats;
    if (std::isfinite(e_hf[i].energy) && st.mean - e_hf[i].energy > 3 * st.error)
      log::warn(strfmt("%s%sthe final energy %.6f +- %.6f Eh is above the Hartree-Fock energy %.6f Eh (%s): the "
                       "wavefunction is worse than Hartree-Fock. Train longer (optim.iterations)%s",
                       mols.size() > 1 ? mols[i].name().c_str() : "", mols.size() > 1 ? ": " : "", st.mean, st.error,
                       e_hf[i].energy, e_hf[i].source.c_str(),
                       e_hf_.empty() ? "" : ", or pretrain longer (pretrain.steps) or with a smaller pretrain.lr"));
  }
  // Written once every molecule is evaluated: an evaluation interrupted on the way leaves a
  // resume's files (its earlier evaluation and summary.json) as they were.
  io::H5File* results = results_to_write();
  if (results)
    for (std::size_t i = 0; i < mols.size(); ++i)
      for (double v : out.evals[i].series) results->append("eval/" + mols[i].name() + "/energy", v);
  // Run-level series: per step, the mean over molecules (for one molecule, its series).
  out.final_eval = out.evals.front();
  if (results) {  // rank 0 writes
    for (double v : mean_series) results->append("eval/energy", v);
    results->flush();  // summary.json only for a complete result.h5
    // (the stage timings are this process's: a resumed run's from the iteration it resumed at)
    write_summary(output_ + "/summary.json", setup_, out.evals, timers_, iteration_,
                  {{"failed_steps", out.failed_steps},
                   {"excluded_walkers", out.excluded_walkers},
                   {"timings_from_iteration", first_iteration_},
                   {"optimizer", cfg.optim.type},
                   {"stopped_by", stopped_by_},
                   {"resumes_with_changes", history_array(history_)}},
                  e_hf);
  }
  // The result itself is the caller's to print or log (nnvmc train: on stdout, whatever the
  // log level; a comparison's cell: in its log, log_eval_text).
}

}  // namespace nnvmc
