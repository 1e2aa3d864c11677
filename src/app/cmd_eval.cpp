/// nnvmc eval CHECKPOINT [--steps N] [--walkers W] [--seed S] [key=value ...] [--json]
#include <iostream>

#include <nlohmann/json.hpp>

#include "app/commands.hpp"
#include "app/run_args.hpp"
#include "parallel/communicator.hpp"
#include "core/errors.hpp"
#include "core/log.hpp"
#include "train/checkpoint.hpp"
#include "train/evaluate.hpp"
#include "train/summary.hpp"

namespace nnvmc::app {

namespace {
struct EvalArgs {
  std::vector<std::string> args;
  int steps = -1, walkers = -1;
  long long seed = -1;
  bool json = false;
};

void run_eval(const EvalArgs& a) {
  RunArgs ra = split_run_args(a.args);
  if (ra.file.empty()) throw InputError("eval: give a CHECKPOINT file");
  const Checkpoint c = load_checkpoint(ra.file);
  // The chain starts with the step size training adapted (the user's overrides still win);
  // evaluate() adapts it during burn-in only and measures with it frozen.
  ra.overrides.insert(ra.overrides.begin(), strfmt("sampler.step_size=%.17g", c.sampler.step_size));
  if (a.steps >= 0) ra.overrides.push_back("eval.steps=" + std::to_string(a.steps));
  if (a.walkers >= 0) ra.overrides.push_back("sampler.walkers=" + std::to_string(a.walkers));
  if (a.seed >= 0) ra.overrides.push_back("run.seed=" + std::to_string(a.seed));
  const Config config = parse_config(c.config_yaml, ra.overrides, ra.file + ":config");
  VmcSetup setup = make_setup(config);
  const bool same_geometry = check_checkpoint_system(c.system, setup.system, *setup.wf);
  load_module_state(*setup.wf, c.parameters);
  // Walkers start where training left them (around new nuclei at a new geometry); the chain is
  // re-seeded from run.seed.
  if (same_geometry)
    setup.sampler->initialize_from(c.sampler.r, setup.logabs_fn());
  else
    setup.sampler->initialize(setup.logabs_fn());
  StageTimers timers;
  const int every = std::max(1, config.eval.steps / 10);
  const EvalResult r = evaluate(setup, config.eval, timers, [&](int done, int total) {
    if (!a.json && done % every == 0) log::info(strfmt("eval %d/%d", done, total));
  });
  nlohmann::json j = eval_json(r);
  j["checkpoint"] = ra.file;
  j["laplacian"] = config.hamiltonian.laplacian;
  j["seconds"] = timers_json(timers);
  if (!parallel::world().is_root()) return;  // every rank holds the same result; rank 0 prints it
  if (a.json) {
    std::cout << j.dump() << std::endl;
  } else {
    std::cout << eval_text(r);
  }
}
}  // namespace

void add_eval_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("eval", "Evaluate the energy of a checkpoint with an error bar");
  auto a = std::make_shared<EvalArgs>();
  cmd->add_option("args", a->args, "CHECKPOINT followed by key.path=value overrides");
  cmd->add_option("--steps", a->steps, "measurement iterations (default: eval.steps)");
  cmd->add_option("--walkers", a->walkers, "walkers (default: as trained)");
  cmd->add_option("--seed", a->seed, "random seed of the evaluation chain");
  cmd->add_flag("--json", a->json, "print one JSON object");
  cmd->callback([a] { run_eval(*a); });
}

}  // namespace nnvmc::app
