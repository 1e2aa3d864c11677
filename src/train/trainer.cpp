#include "train/trainer.hpp"

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <optional>

#include "core/errors.hpp"
#include "core/log.hpp"
#include "io/hdf5_file.hpp"
#include "scf/basis.hpp"
#include "train/distributed.hpp"
#include "train/finite_walkers.hpp"
#include "train/pretrain.hpp"
#include "train/summary.hpp"

namespace nnvmc {
namespace fs = std::filesystem;
namespace {
std::atomic<bool> g_stop{false};
void on_signal(int) { g_stop = true; }
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
const char* const kRunFiles[] = {"checkpoint.h5", "result.h5", "summary.json"};
/// Deep copies (optimizer states hold tensors that their step updates in place).
TensorMap cloned(const TensorMap& m) {
  TensorMap out;
  for (const auto& [k, v] : m) out[k] = v.clone();
  return out;
}
/// Training needs parameters, pretraining the basis for this molecule and an ansatz with
/// orbitals: checked before anything is written.
void check_pretraining(const VmcSetup& s) {
  const bool no_parameters = s.wf->parameters().empty();
  if (no_parameters && s.config.optim.iterations > 0)
    throw ConfigError("optim.iterations: the '" + s.config.model.type + "' ansatz has no parameters to train; "
                      "set optim.iterations=0 to evaluate it");
  if (s.config.pretrain.steps <= 0) return;
  if (no_parameters)
    throw ConfigError("pretrain.steps: the '" + s.config.model.type + "' ansatz has no parameters to pretrain; "
                      "set pretrain.steps=0");
  try {
    (void)scf::make_basis(s.config.pretrain.basis, s.system);
  } catch (const InputError& e) {
    throw ConfigError(std::string("pretrain.basis: ") + e.what());
  }
  try {
    torch::NoGradGuard ng;
    (void)s.wf->orbitals(torch::zeros({1, s.system.n_electrons(), 3}, s.options), s.tensors);
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

void Trainer::install_signal_handlers() {
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
}
void Trainer::request_stop(bool stop) { g_stop = stop; }

Trainer::Trainer(const Config& config) : Trainer(make_setup(config)) {}

Trainer::Trainer(VmcSetup setup) : setup_(std::move(setup)) {
  const Config& config = setup_.config;
  check_pretraining(setup_);
  optimizer_ = make_optimizer(config.optim, *setup_.wf, setup_.budget);
  output_ = resolve_output_dir(config);
  init_output(false);
  setup_.local_energy->set_timers(&timers_);
  if (config.pretrain.steps > 0) {
    const auto p = pretrain(setup_, config.pretrain, timers_);
    if (writes_output()) {
      io::H5File results(output_ + "/result.h5", io::H5File::Mode::append);
      results.append("pretrain/initial_loss", p.initial_loss);
      results.append("pretrain/final_loss", p.final_loss);
      results.append("pretrain/e_hf", p.e_hf);
    }
  }
  // Walkers start (or continue from pretraining) on |ψ|²; burn-in happens in run().
  if (setup_.sampler->positions().defined())
    setup_.sampler->refresh(setup_.logabs_fn());
  else
    setup_.sampler->initialize(setup_.logabs_fn());
}

Trainer::Trainer(const Config& config, const std::string& checkpoint_path)
    : setup_(make_setup(config)), resumed_(true) {
  const Checkpoint c = load_checkpoint(checkpoint_path);
  if (!check_checkpoint_system(c.system, setup_.system, *setup_.wf))
    throw InputError("--resume: the run continues the same Markov chain, so the molecule must be the one "
                     "trained on; to start from these parameters at another geometry, evaluate it or start "
                     "a new run");
  load_module_state(*setup_.wf, c.parameters);
  optimizer_ = make_optimizer(config.optim, *setup_.wf, setup_.budget);
  optimizer_->load_state(c.optimizer);
  setup_.sampler->set_state(c.sampler);
  setup_.local_energy->method().set_rng_state(c.laplacian_rng);
  setup_.local_energy->set_timers(&timers_);
  iteration_ = c.iteration;
  output_ = fs::path(checkpoint_path).parent_path().string();
  if (output_.empty()) output_ = ".";
  init_output(true);
}

void Trainer::prepare_new_output() const {
  std::error_code ec;
  if (fs::exists(output_, ec)) {
    if (!fs::is_directory(output_, ec)) throw InputError("run.output: '" + output_ + "' exists and is not a directory");
    for (const char* f : kRunFiles) {
      if (!fs::exists(fs::path(output_) / f, ec)) continue;
      if (!setup_.config.run.overwrite)
        throw InputError("run.output: '" + output_ + "' already holds a run (" + f + "); continue it with "
                         "'nnvmc train --resume " + output_ + "', choose another run.output, or start over "
                         "with --force (run.overwrite=true)");
    }
    // Starting over: nothing of the previous run may survive to be mixed with this one.
    for (const char* f : kRunFiles) fs::remove(fs::path(output_) / f, ec);
    for (const char* f : {"checkpoint.h5.tmp", "config.yaml.tmp", "summary.json.tmp"})
      fs::remove(fs::path(output_) / f, ec);
  }
  fs::create_directories(output_, ec);
  if (ec) throw InputError("run.output: cannot create directory '" + output_ + "': " + ec.message());
}

void Trainer::init_output(bool resume) {
  if (!writes_output()) return;  // rank 0 writes the run's files
  if (!resume) prepare_new_output();
  {
    const std::string tmp = output_ + "/config.yaml.tmp";
    std::ofstream out(tmp);
    out << to_yaml(setup_.config);
    out.close();
    if (!out) {
      io::remove_quietly(tmp);
      throw InputError("run.output: cannot write to '" + output_ + "' (" + tmp + ")");
    }
    io::rename_into_place(tmp, output_ + "/config.yaml");
  }
  const std::string path = output_ + "/result.h5";
  if (!resume) {
    io::H5File results(path, io::H5File::Mode::truncate);
    return;
  }
  io::remove_quietly(output_ + "/summary.json");  // describes the evaluation removed below
  try {
    io::H5File results(path, io::H5File::Mode::append);
    // Every series is made consistent with the checkpoint we resume from: training rows written
    // after it are dropped (the chain repeats them), the evaluation that followed the end of the
    // previous run is removed (this run evaluates again when it ends), and pretraining (before
    // iteration 0 of every checkpoint of the run) keeps its one row per series.
    for (const auto& col : results.list("train")) results.truncate("train/" + col, iteration_);
    results.remove("eval");
    if (setup_.config.pretrain.steps > 0)
      for (const auto& col : results.list("pretrain")) results.truncate("pretrain/" + col, 1);
    else
      results.remove("pretrain");
  } catch (const CheckpointError& e) {
    // A process killed while writing result.h5 can leave it unreadable; the checkpoint is what
    // the chain continues from, so the run goes on with a new file and keeps the old one aside.
    std::error_code ec;
    fs::rename(path, path + ".damaged", ec);
    log::warn(strfmt("%s; kept as result.h5.damaged, continuing in a new result.h5 from iteration %ld",
                     e.what(), static_cast<long>(iteration_)));
    io::H5File results(path, io::H5File::Mode::truncate);
  }
}

Checkpoint Trainer::checkpoint() const {
  Checkpoint c;
  c.iteration = iteration_;
  c.config_yaml = to_yaml(setup_.config);
  c.system = setup_.system;
  c.parameters = module_state(*setup_.wf);
  c.optimizer = optimizer_->state();
  c.sampler = setup_.sampler->global_state();  // all ranks' walkers
  c.laplacian_rng = setup_.local_energy->method().rng_state();
  return c;
}

void Trainer::write_checkpoint() {
  const Checkpoint c = checkpoint();  // gathers the walkers: called on every rank
  if (writes_output()) save_checkpoint(output_ + "/checkpoint.h5", c);
}

void Trainer::log_progress(std::int64_t t, double energy, double err, double var, double acc) {
  const double elapsed = now() - start_time_;
  const double done = static_cast<double>(t + 1 - first_iteration_);
  const double rate = done / std::max(elapsed, 1e-9);
  const double left = (setup_.config.optim.iterations - (t + 1)) / std::max(rate, 1e-9);
  log::info(strfmt("it %6ld/%d  E %.6f ± %.6f  var %.4f  acc %.2f  step %.3f  %.2f it/s  ETA %s",
                   static_cast<long>(t + 1), setup_.config.optim.iterations, energy, err, var, acc,
                   setup_.sampler->step_size(), rate, fmt_duration(left).c_str()));
}

void Trainer::burn_in(int steps) {
  // In blocks of steps_per_iteration, adapting the step size after each block.
  const auto logabs = setup_.logabs_fn();
  const int block = std::max(1, setup_.config.sampler.steps_per_iteration);
  auto scope = timers_.scope("sampling");
  for (int done = 0; done < steps; done += block)
    setup_.sampler->adapt(setup_.sampler->run(logabs, std::min(block, steps - done)));
}

TrainOutcome Trainer::run(bool final_eval) {
  auto& cfg = setup_.config;
  auto& sampler = *setup_.sampler;
  const auto logabs = setup_.logabs_fn();
  std::optional<io::H5File> results;  // rank 0 only
  if (writes_output()) results.emplace(output_ + "/result.h5", io::H5File::Mode::append);
  TrainOutcome out;
  if (iteration_ == 0 && !resumed_) burn_in(cfg.sampler.burn_in);
  const std::int64_t first = iteration_;
  first_iteration_ = first;
  start_time_ = now();
  double iter_start = start_time_;
  int consecutive_failures = 0;
  bool finished_early = false;
  for (std::int64_t t = first; t < cfg.optim.iterations;) {
    // All ranks act on the same answer (a signal or a wall-time hook may reach one rank first).
    const int asked = static_cast<int>(hook_ ? hook_(t) : StopAction::none);
    const int stop_code = max_over_ranks(asked + (g_stop ? 8 : 0));
    const StopAction action = static_cast<StopAction>(stop_code & 7);
    const bool stop = stop_code >= 8;
    if (action == StopAction::finish) {
      finished_early = true;
      break;
    }
    if (stop || action == StopAction::interrupt) {
      log::warn(strfmt("stop requested: writing checkpoint at iteration %ld", static_cast<long>(iteration_)));
      write_checkpoint();
      out.interrupted = true;
      out.iterations = iteration_;
      return out;
    }
    const TensorMap good_params = module_state(*setup_.wf);
    const TensorMap good_optimizer = cloned(optimizer_->state());
    const SamplerState good_sampler = sampler.state();
    double acc;
    {
      auto scope = timers_.scope("sampling");
      acc = sampler.run(logabs, cfg.sampler.steps_per_iteration);
      sampler.adapt(acc);
    }
    torch::Tensor e;
    {
      auto scope = timers_.scope("local_energy");
      e = (*setup_.local_energy)(*setup_.wf, sampler.positions()).energy;
    }
    if (energy_hook_) energy_hook_(t, e);
    // Walkers with a non-finite local energy (e.g. on a node) are left out of this step (one
    // host read); one fused check of energies and parameters follows the step. With several
    // ranks, every rank decides from the energies of all walkers (so all take the same branch).
    std::int64_t offset = 0;
    torch::Tensor e_all = all_walkers(e, &offset);
    const FiniteWalkers finite = finite_walkers(e_all);
    bool ok = finite.ok;
    torch::Tensor r = sampler.positions();
    if (ok && finite.excluded > 0) {
      const auto mine = own_rows(finite.mask, offset, e.size(0));
      r = r.index({mine});
      e = e.index({mine});
      e_all = e_all.index({finite.mask});
    }
    if (ok) ok = optimizer_->step(*setup_.wf, {WalkerBatch{&setup_.tensors, r, e}}, t, timers_);
    if (ok) {
      std::vector<torch::Tensor> checked = setup_.wf->parameters();
      checked.push_back(e_all);
      ok = all_finite(checked);
    }
    if (!ok) {
      // Back to the last good parameters, optimizer state and walkers, but NOT the sampler's
      // random stream: the retry draws new moves (deterministically, so a resumed run repeats
      // it exactly) instead of replaying the failure.
      ++consecutive_failures;
      ++out.failed_steps;
      load_module_state(*setup_.wf, good_params);
      optimizer_->load_state(good_optimizer);
      SamplerState retry = good_sampler;
      retry.rng_state = sampler.state().rng_state;
      sampler.set_state(retry);
      const std::string why = finite.ok ? "non-finite gradient or parameters"
                                        : strfmt("%ld of %ld local energies non-finite",
                                                 static_cast<long>(finite.excluded), static_cast<long>(e_all.size(0)));
      log::warn(strfmt("iteration %ld: %s; step rejected, last good state restored (%d consecutive)",
                       static_cast<long>(t + 1), why.c_str(), consecutive_failures));
      if (consecutive_failures >= cfg.optim.max_consecutive_failures) {
        write_checkpoint();
        throw NumericalError(strfmt(
            "training stopped: %d consecutive iterations failed (%s) at iteration %ld "
            "(optim.max_consecutive_failures); the last good state (iteration %ld) is in %s/checkpoint.h5. "
            "Try a smaller optim.lr or optim.sr.norm_constraint, or another seed",
            consecutive_failures, why.c_str(), static_cast<long>(t + 1), static_cast<long>(iteration_),
            output_.c_str()));
      }
      continue;
    }
    consecutive_failures = 0;
    out.excluded_walkers += finite.excluded;
    if (finite.excluded > 0)
      log::warn(strfmt("iteration %ld: %ld walker(s) with a non-finite local energy left out",
                       static_cast<long>(t + 1), static_cast<long>(finite.excluded)));
    {
      auto scope = timers_.scope("sampling");
      sampler.refresh(logabs);  // parameters changed: log|ψ| of the current walkers
    }
    auto bookkeeping = timers_.scope("bookkeeping");  // results, progress line, checkpoint: to the end
    iteration_ = t + 1;
    const auto e64 = e_all.detach().to(torch::kFloat64).cpu();  // the iteration's one device-to-host copy
    const auto mean = e64.mean();  // on the host: read below without a sync
    const auto stats = torch::stack({mean, (e64 - mean).square().sum() / std::max<int64_t>(1, e64.numel() - 1)});
    const double energy = stats.data_ptr<double>()[0], var = stats.data_ptr<double>()[1];
    const double err = std::sqrt(var / e64.numel());
    const double t_now = now();
    if (results) {
      results->append("train/energy", energy);
      results->append("train/variance", var);
      results->append("train/acceptance", acc);
      results->append("train/step_size", sampler.step_size());
      results->append("train/learning_rate", optimizer_->learning_rate(t));
      results->append("train/excluded_walkers", static_cast<double>(finite.excluded));
      results->append("train/seconds", t_now - iter_start);
      results->flush();
    }
    iter_start = t_now;
    if ((t + 1) % cfg.optim.log_every == 0 || t + 1 == cfg.optim.iterations)
      log_progress(t, energy, err, var, acc);
    if (cfg.run.checkpoint_every > 0 && (t + 1) % cfg.run.checkpoint_every == 0) write_checkpoint();
    ++t;
  }
  if (hook_ && !finished_early) hook_(cfg.optim.iterations);
  write_checkpoint();
  out.iterations = iteration_;
  if (out.failed_steps > 0 || out.excluded_walkers > 0)
    log::warn(strfmt("training: %ld step(s) rejected and retried, %ld walker sample(s) left out",
                     static_cast<long>(out.failed_steps), static_cast<long>(out.excluded_walkers)));
  if (final_eval && cfg.eval.steps > 0) {
    log::info(strfmt("evaluating: %d steps x %d walkers", cfg.eval.steps, cfg.sampler.walkers));
    out.final_eval = evaluate(setup_, cfg.eval, timers_);
    if (results) {
      for (double v : out.final_eval.series) results->append("eval/energy", v);
      write_summary(output_ + "/summary.json", setup_, out.final_eval, timers_, iteration_,
                    {{"failed_steps", out.failed_steps}, {"excluded_walkers", out.excluded_walkers}});
    }
    for (std::string text = eval_text(out.final_eval); !text.empty();) {  // one log line per line
      const auto nl = text.find('\n');
      (text.rfind("warning", 0) == 0 ? log::warn : log::info)(text.substr(0, nl));
      text = nl == std::string::npos ? "" : text.substr(nl + 1);
    }
  }
  return out;
}

}  // namespace nnvmc
