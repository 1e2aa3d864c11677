#include "train/trainer.hpp"

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>

#include "core/errors.hpp"
#include "core/log.hpp"
#include "io/hdf5_file.hpp"
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

Trainer::Trainer(const Config& config) : setup_(make_setup(config)) {
  optimizer_ = make_optimizer(config.optim, *setup_.wf, setup_.budget);
  output_ = resolve_output_dir(config);
  init_output(false);
  if (config.pretrain.steps > 0) {
    const auto p = pretrain(setup_, config.pretrain, timers_);
    io::H5File results(output_ + "/result.h5", io::H5File::Mode::append);
    results.append("pretrain/initial_loss", p.initial_loss);
    results.append("pretrain/final_loss", p.final_loss);
    results.append("pretrain/e_hf", p.e_hf);
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
  iteration_ = c.iteration;
  output_ = fs::path(checkpoint_path).parent_path().string();
  if (output_.empty()) output_ = ".";
  init_output(true);
}

void Trainer::init_output(bool resume) {
  fs::create_directories(output_);
  {
    const std::string tmp = output_ + "/config.yaml.tmp";
    std::ofstream(tmp) << to_yaml(setup_.config);
    io::rename_into_place(tmp, output_ + "/config.yaml");
  }
  io::H5File results(output_ + "/result.h5",
                     resume ? io::H5File::Mode::append : io::H5File::Mode::truncate);
  // Rows written after the checkpoint we resume from are dropped: the chain repeats them.
  for (const auto& col : results.list("train")) results.truncate("train/" + col, iteration_);
}

Checkpoint Trainer::checkpoint() const {
  Checkpoint c;
  c.iteration = iteration_;
  c.config_yaml = to_yaml(setup_.config);
  c.system = setup_.system;
  c.parameters = module_state(*setup_.wf);
  c.optimizer = optimizer_->state();
  c.sampler = setup_.sampler->state();
  c.laplacian_rng = setup_.local_energy->method().rng_state();
  return c;
}

void Trainer::write_checkpoint() {
  save_checkpoint(output_ + "/checkpoint.h5", checkpoint());
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

TrainOutcome Trainer::run(bool final_eval) {
  auto& cfg = setup_.config;
  auto& sampler = *setup_.sampler;
  const auto logabs = setup_.logabs_fn();
  io::H5File results(output_ + "/result.h5", io::H5File::Mode::append);
  TrainOutcome out;
  if (iteration_ == 0 && !resumed_) {
    auto scope = timers_.scope("sampling");
    sampler.run(logabs, cfg.sampler.burn_in);
  }
  const std::int64_t first = iteration_;
  first_iteration_ = first;
  start_time_ = now();
  double iter_start = start_time_;
  for (std::int64_t t = first; t < cfg.optim.iterations; ++t) {
    if (g_stop) {
      log::warn(strfmt("stop requested: writing checkpoint at iteration %ld", static_cast<long>(iteration_)));
      write_checkpoint();
      out.interrupted = true;
      out.iterations = iteration_;
      return out;
    }
    const TensorMap good_params = module_state(*setup_.wf);
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
    // Non-finite local energies make the optimizer reject its step (non-finite gradient) or
    // give non-finite parameters; either way one fused check of energies and parameters (one
    // host read) catches them after the step.
    bool ok = optimizer_->step(*setup_.wf, {WalkerBatch{&setup_.tensors, sampler.positions(), e}}, t, timers_);
    if (ok) {
      std::vector<torch::Tensor> checked = setup_.wf->parameters();
      checked.push_back(e);
      ok = all_finite(checked);
    }
    if (!ok) {
      log::warn(strfmt("iteration %ld: non-finite local energy or gradient; step rejected, last good "
                       "state restored", static_cast<long>(t + 1)));
      load_module_state(*setup_.wf, good_params);
      sampler.set_state(good_sampler);
      continue;
    }
    {
      auto scope = timers_.scope("sampling");
      sampler.refresh(logabs);  // parameters changed: log|ψ| of the current walkers
    }
    iteration_ = t + 1;
    const auto e64 = e.detach().to(torch::kFloat64).cpu();  // the iteration's one device-to-host copy
    const auto mean = e64.mean();  // on the host: read below without a sync
    const auto stats = torch::stack({mean, (e64 - mean).square().sum() / std::max<int64_t>(1, e64.numel() - 1)});
    const double energy = stats.data_ptr<double>()[0], var = stats.data_ptr<double>()[1];
    const double err = std::sqrt(var / e64.numel());
    const double t_now = now();
    results.append("train/energy", energy);
    results.append("train/variance", var);
    results.append("train/acceptance", acc);
    results.append("train/step_size", sampler.step_size());
    results.append("train/learning_rate", optimizer_->learning_rate(t));
    results.append("train/seconds", t_now - iter_start);
    iter_start = t_now;
    results.flush();
    if ((t + 1) % cfg.optim.log_every == 0 || t + 1 == cfg.optim.iterations)
      log_progress(t, energy, err, var, acc);
    if (cfg.run.checkpoint_every > 0 && (t + 1) % cfg.run.checkpoint_every == 0) write_checkpoint();
  }
  write_checkpoint();
  out.iterations = iteration_;
  if (final_eval && cfg.eval.steps > 0) {
    log::info(strfmt("evaluating: %d steps x %d walkers", cfg.eval.steps, cfg.sampler.walkers));
    out.final_eval = evaluate(setup_, cfg.eval, timers_);
    for (double v : out.final_eval.series) results.append("eval/energy", v);
    write_summary(output_ + "/summary.json", setup_, out.final_eval, timers_, iteration_);
    log::info(strfmt("energy %.6f ± %.6f Eh  (variance %.4f, autocorrelation %.1f)",
                     out.final_eval.stats.mean, out.final_eval.stats.error, out.final_eval.variance,
                     out.final_eval.stats.autocorr_time));
  }
  return out;
}

}  // namespace nnvmc
