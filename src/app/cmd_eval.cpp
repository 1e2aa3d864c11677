/// nnvmc eval CHECKPOINT [--steps N] [--walkers W] [--seed S] [--molecule NAME] [key=value ...] [--json]
/// Evaluates every molecule of the run (or the one named, or those of a system.molecule(s)
/// override); --json prints one object for one molecule and a list of objects for several.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <iostream>
#include <limits>
#include <tuple>

#include <nlohmann/json.hpp>

#include "app/commands.hpp"
#include "app/run_args.hpp"
#include "batching/device_stage_timing.hpp"
#include "core/elements.hpp"
#include "parallel/communicator.hpp"
#include "core/config_yaml.hpp"
#include "core/errors.hpp"
#include "core/molecule_list.hpp"
#include "core/log.hpp"
#include "train/checkpoint.hpp"
#include "train/evaluate.hpp"
#include "train/summary.hpp"
#include "train/trainer.hpp"
#include "core/json_text.hpp"

namespace nnvmc::app {

namespace {
struct EvalArgs {
  std::vector<std::string> args;
  int steps = -1, walkers = -1;
  std::string seed;  ///< as given (empty: not given); run.seed is 64-bit unsigned
  std::string molecule;
  bool json = false;
};

/// The trained molecule whose walkers a molecule of the evaluation starts from: the one with the
/// same name and geometry, else the first with the same geometry; nullptr when none.
const MoleculeCheckpoint* trained_walkers(const Checkpoint& c, const System& target) {
  for (const auto& m : c.molecules)
    if (m.system.name == target.name && same_geometry(m.system, target)) return &m;
  for (const auto& m : c.molecules)
    if (same_geometry(m.system, target)) return &m;
  return nullptr;
}

/// Why no trained walkers fit `target` (trained_walkers gave none): another number of up or down
/// electrons at a trained geometry, or another geometry.
std::string why_fresh_walkers(const Checkpoint& c, const System& target) {
  for (const auto& m : c.molecules) {
    bool same_nuclei = m.system.atoms.size() == target.atoms.size();
    for (std::size_t a = 0; same_nuclei && a < target.atoms.size(); ++a)
      same_nuclei = m.system.atoms[a].Z == target.atoms[a].Z &&
                    m.system.atoms[a].position == target.atoms[a].position;
    if (same_nuclei)
      return strfmt("a trained geometry ('%s') with other electrons (charge %d, spin %d; trained: charge %d, spin %d)",
                    m.system.name.c_str(), target.charge, target.spin, m.system.charge, m.system.spin);
  }
  return "not a geometry the checkpoint was trained on";
}

/// Overrides of keys an evaluation does not use (training, pretraining, where a run writes) are
/// valid config keys, so they are accepted; each is named in a warning instead of ignored silently.
void warn_of_training_only(const std::vector<std::string>& overrides) {
  static const char* const kTrainingOnly[] = {"optim",    "pretrain",             "run.output",     "run.overwrite",
                                              "run.name", "run.checkpoint_every", "model.init_from"};
  for (const auto& o : overrides)
    if (std::any_of(std::begin(kTrainingOnly), std::end(kTrainingOnly), [&](const char* t) { return override_sets(o, t); }))
      log::warn("eval: '" + o + "' has no effect on an evaluation (a training setting)");
}

/// The model is the checkpoint's: an override of it would evaluate another wavefunction with
/// parameters trained for this one (some would load, e.g. a Jastrow or cusp option).
void refuse_model_changes(const std::vector<std::string>& overrides) {
  // (a model={init_from: "", paulinet: {...}} mapping sets more than the training-only
  // init_from: it passed as one, and evaluated another model, a user audit)
  const auto sets_more_than_init_from = [](const std::string& o) {
    const auto alone = config_yaml::override_tree(o);
    if (!alone || !override_sets(o, "model")) return false;
    const YAML::Node model = (*alone)["model"];
    if (!model.IsMap()) return true;
    for (const auto& kv : model)
      if (kv.first.Scalar() != "init_from") return true;
    return false;
  };
  for (const auto& o : overrides)
    if (sets_more_than_init_from(o))
      throw InputError("eval: '" + o + "': the model is the one the checkpoint was trained with; evaluate another "
                       "model from its own checkpoint (or train it from this one with model.init_from)");
}

/// The molecule files' reference energies (e_ref) for the checkpoint's molecules, which it stores
/// as geometries: from the run's recorded molecules where they still resolve and are the same
/// molecule (nuclei up to a rigid motion, charge, spin). A molecule file moved away gives none.
void attach_references(Checkpoint& c) {
  std::vector<System> recorded;
  try {
    const log::Quiet quiet;  // (the run resolves its molecules again, with their messages)
    recorded = resolve_molecules(parse_config(c.config_yaml, {}, "checkpoint:config").system);
  } catch (const InputError&) {  // (a molecule file moved away: no reference)
    return;
  }
  for (auto& m : c.molecules)
    for (const System& s : recorded)
      if (s.e_ref && s.charge == m.system.charge && s.spin == m.system.spin && congruent(s, m.system)) {
        m.system.e_ref = s.e_ref;
        m.system.e_ref_source = s.e_ref_source;
        break;
      }
}

void run_eval(const EvalArgs& a) {
  // Ctrl-C stops at the next step with a message and exit code 1 (it killed the process, 130)
  Trainer::install_signal_handlers();
  RunArgs ra = split_run_args(a.args);
  if (ra.file.empty()) throw InputError("eval: give a CHECKPOINT file (or a run's output directory)");
  std::optional<Checkpoint> read;  // (a run's directory: its checkpoint, read once)
  bool fell_back = false;          // (the older checkpoint in place of a damaged latest one)
  if (std::error_code ec; std::filesystem::is_directory(ra.file, ec)) {
    read.emplace();
    const std::string latest = run_checkpoint("eval", ra.file);
    ra.file = readable_checkpoint("eval " + ra.file, latest, &*read);
    fell_back = ra.file != latest;
  }
  const std::vector<std::string> given = ra.overrides;  // the user's, before the ones added below
  // Training and pretraining settings have no effect here (warned below). Applied, they were
  // validated against the checkpoint's others, and optim.type=kfac failed on adam's
  // determinant_balance, blamed on the checkpoint (a user audit); model.init_from failed on a
  // pretrained run's pretrain.steps (another).
  std::erase_if(ra.overrides, [](const std::string& o) {
    return override_sets(o, "optim") || override_sets(o, "pretrain") || override_sets(o, "model.init_from");
  });
  Checkpoint c = read ? std::move(*read) : load_checkpoint(ra.file);
  require_same_checkpoint_on_all_ranks(c, "eval " + ra.file);
  attach_references(c);
  // The chains start with the step sizes training adapted (the user's overrides still win);
  // evaluate() adapts them during burn-in only and measures with them frozen.
  bool step_size_given = false, molecules_given = false;
  for (const auto& o : ra.overrides) {  // (also as mappings: sampler={step_size: 0.2})
    step_size_given = step_size_given || override_sets(o, "sampler.step_size");
    molecules_given = molecules_given || override_sets(o, "system.molecule") || override_sets(o, "system.molecules") ||
                      override_sets(o, "system.dataset");
  }
  // Without a molecule override: the molecules the checkpoint was trained on, as it stores them.
  if (!molecules_given) ra.overrides.insert(ra.overrides.begin(), "system.molecules=" + checkpoint_molecules(c));
  ra.overrides.insert(ra.overrides.begin(), strfmt("sampler.step_size=%.17g", c.molecules.front().sampler.step_size));
  if (a.steps >= 0) ra.overrides.push_back("eval.steps=" + std::to_string(a.steps));
  if (a.walkers >= 0) ra.overrides.push_back("sampler.walkers=" + std::to_string(a.walkers));
  if (!a.seed.empty()) ra.overrides.push_back("run.seed=" + a.seed);
  Config config = parse_config(c.config_yaml, ra.overrides, ra.file + ":config");
  // another precision than training's is said (the text output shows none; a user audit)
  if (const YAML::Node run = YAML::Load(c.config_yaml)["run"]; run && run.IsMap() && run["dtype"] &&
                                                                 run["dtype"].IsScalar() &&
                                                                 run["dtype"].Scalar() != config.run.dtype)
    log::info("eval: the checkpoint was trained in " + run["dtype"].Scalar() + "; evaluating in " + config.run.dtype +
              " (run.dtype)");
  // A run trained with eval.steps = 0 (no final evaluation) is measured with the default count
  // unless --steps or an override gives one (its own 0 refused the command its log suggests).
  const bool steps_given = a.steps >= 0 || std::any_of(ra.overrides.begin(), ra.overrides.end(), [](const std::string& o) {
                             return override_sets(o, "eval.steps");
                           });
  if (!steps_given && config.eval.steps < 1) {
    config.eval.steps = EvalOptions{}.steps;
    log::info(strfmt("the run was trained with eval.steps = 0; evaluating %d steps (--steps N for another count)",
                     config.eval.steps));
  }
  // (a burn-in the user gives is kept; below the default for copies it is warned about)
  const bool short_burn_in_given =
      config.eval.burn_in < kMinFreshWalkersBurnIn &&
      std::any_of(given.begin(), given.end(), [](const std::string& o) { return override_sets(o, "eval.burn_in"); });
  // (the text result says it again, as UNRELIABLE: said here for --json, whose flag is copies_not_apart)
  if (config.sampler.walkers > c.molecules.front().sampler.r.size(0) && short_burn_in_given && a.json)
    log::warn(strfmt("eval: more walkers than the checkpoint holds start from repeated positions, and after "
                     "eval.burn_in = %d steps (%d by default for them) those copies may not yet be independent chains: "
                     "a short evaluation's error bar then comes out too small",
                     config.eval.burn_in, kMinFreshWalkersBurnIn));
  if (config.eval.steps < 1) throw ConfigError("eval: 'eval.steps' must be at least 1 to measure anything");
  refuse_model_changes(given);
  for (const auto& [flag, value, key] : {std::tuple<const char*, long long, const char*>{"--seed", a.seed.empty() ? -1 : 0, "run.seed"},
                                         {"--walkers", a.walkers, "sampler.walkers"},
                                         {"--steps", a.steps, "eval.steps"}})
    for (const auto& o : given)
      if (value >= 0 && override_sets(o, key))  // (the flag used to win silently)
        throw InputError(std::string("eval: ") + flag + " and '" + o + "' both set " + key + "; give one");
  warn_of_training_only(given);
  VmcSetup setup = [&] {
    try {
      std::vector<System> trained;  // (a molecule given turned or moved is evaluated as trained)
      for (const auto& m : c.molecules) trained.push_back(m.system);
      return make_setup(config, SetupPurpose::evaluation, trained);
    } catch (const ConfigError& e) {  // the walkers came from --walkers, not from a key the user wrote
      if (a.walkers >= 0 && std::string(e.what()).find("'sampler.walkers'") != std::string::npos)
        throw ConfigError("--walkers " + std::to_string(a.walkers) + ": " + e.what());
      throw;
    }
  }();
  // The run's molecules, written inline under their run names, keep the names their list gave
  // them (--molecule traj@3 finds the run's traj_3)
  if (!molecules_given) setup.keep_given_names(c);
  std::vector<std::size_t> chosen;
  if (!a.molecule.empty()) {
    try {
      chosen = {setup.molecule_index(a.molecule)};
    } catch (const InputError& e) {
      throw InputError(std::string("--molecule: ") + e.what());
    }
  } else {
    for (std::size_t i = 0; i < setup.molecules.size(); ++i) chosen.push_back(i);
  }
  std::vector<const System*> targets;
  for (std::size_t i : chosen) targets.push_back(&setup.molecules[i].system);
  load_trained_state(*setup.wf, c, targets);
  nlohmann::json list = nlohmann::json::array();
  std::string text;
  for (std::size_t i : chosen) {
    auto& m = setup.molecules[i];
    // Walkers start where training left them; each chain is re-seeded from run.seed. Walkers
    // placed afresh around the nuclei (another geometry) need the burn-in of a new run, or more:
    // at the default 50 steps a shifted He atom measured 5 mEh high (a user audit), which the
    // error bar cannot include. An eval.burn_in the user gives is kept.
    EvalOptions eval = config.eval;
    std::int64_t copied_from = 0;  // (the walkers' origin, for the result's checks)
    bool fresh = false;
    const bool burn_in_given =
        std::any_of(given.begin(), given.end(), [](const std::string& o) { return override_sets(o, "eval.burn_in"); });
    if (const MoleculeCheckpoint* trained = trained_walkers(c, m.system)) {
      if (std::any_of(given.begin(), given.end(), [](const std::string& o) { return override_sets(o, "sampler.burn_in"); }))
        log::warn("eval: sampler.burn_in has no effect on " + m.name() + ", whose walkers continue from training; "
                  "the evaluation's burn-in is eval.burn_in");
      // More walkers than training left start as copies of those: a copy and its original are
      // one chain until their random streams part them, and the error bar, which counts every
      // walker as independent, came out 1.4-1.6x too small at the default burn-in (a user
      // audit; 1.0 after 500 steps). They get the burn-in of fresh walkers unless one is given.
      const std::int64_t held = trained->sampler.r.size(0);
      fresh = c.iteration == 0;  // (nothing trained: the start's walkers, not training's)
      if (config.sampler.walkers > held) {
        copied_from = held;
        if (!burn_in_given) eval.burn_in = std::max(eval.burn_in, kMinFreshWalkersBurnIn);
        // (a given burn-in below the default is the user's, and warned about above: "so the copies
        // decorrelate" after "0 steps" read as a contradiction, a user audit)
        if (!burn_in_given || eval.burn_in >= kMinFreshWalkersBurnIn)
          log::info(strfmt("%s: %d walkers from the checkpoint's %lld (repeated), with a burn-in of %d steps so the "
                           "copies decorrelate%s",
                           m.name().c_str(), config.sampler.walkers, static_cast<long long>(held), eval.burn_in,
                           burn_in_given ? " (eval.burn_in)" : " (eval.burn_in=N for another)"));
        else
          log::info(strfmt("%s: %d walkers from the checkpoint's %lld (repeated), with the burn-in given, %d steps",
                           m.name().c_str(), config.sampler.walkers, static_cast<long long>(held), eval.burn_in));
      }
      m.sampler->initialize_from(trained->sampler.r, setup.logabs_fn(i));
      if (!step_size_given) {
        SamplerState st = m.sampler->state();
        st.step_size = trained->sampler.step_size;
        m.sampler->set_state(st);
      }
    } else {
      fresh = true;
      if (!burn_in_given) eval.burn_in = std::max({eval.burn_in, config.sampler.burn_in, fresh_walkers_burn_in(m.system)});
      log::info(strfmt("%s: %s; walkers start around its nuclei, with a burn-in of %d steps%s", m.name().c_str(),
                       why_fresh_walkers(c, m.system).c_str(), eval.burn_in,
                       burn_in_given ? " (eval.burn_in)" : " (eval.burn_in=N for another)"));
      m.sampler->initialize(setup.logabs_fn(i));
    }
    // on a GPU the stages' device time (CUDA events), as in training
    const batching::DeviceStageTiming device_timing = batching::device_stage_timing(setup.options.device());
    StageTimers timers;
    device_timing.attach(timers);
    const int every = std::max(1, config.eval.steps / 10);
    EvalResult r = evaluate(setup, eval, timers, [&](int done, int total) {
      if (!a.json && done % every == 0) log::info(strfmt("eval %s %d/%d", m.name().c_str(), done, total));
    }, i);
    r.walkers_copied_from = copied_from;
    r.fresh_walkers = fresh;
    nlohmann::json j = {{"molecule", m.name()}};
    j.update(eval_json(r));
    j.update(molecule_json(m.system));
    j["checkpoint"] = ra.file;
    j["checkpoint_iteration"] = c.iteration;  // (the training iteration the wavefunction is from)
    j["burn_in"] = eval.burn_in;  // (the steps run before measuring, after the rules above)
    j["seed"] = config.run.seed;
    j["laplacian"] = config.hamiltonian.laplacian;
    j["dtype"] = config.run.dtype;
    j["device"] = config.run.device;
    j["seconds"] = timers_json(timers);
    list.push_back(std::move(j));
    text += (chosen.size() > 1 ? m.name() + ":\n" : "") + eval_text(r);
  }
  if (!parallel::world().is_root()) return;  // every rank holds the same results; rank 0 prints them
  if (a.json) {
    std::cout << json_text(list.size() == 1 ? list[0] : list) << std::endl;
  } else {
    std::cout << text;
    // which wavefunction this is (a user audit: neither said the training iteration), and the
    // checkpoint before a damaged latest one on stdout too, which --log-level error leaves alone
    std::cout << strfmt("checkpoint %s (iteration %lld)%s\n", ra.file.c_str(), static_cast<long long>(c.iteration),
                        fell_back ? ": the latest, checkpoint.h5, could not be read" : "");
  }
}
}  // namespace

void add_eval_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("eval", "Evaluate the energy of a checkpoint with an error bar");
  auto a = std::make_shared<EvalArgs>();
  cmd->add_option("args", a->args, "CHECKPOINT (a file, or a run's output directory) followed by key.path=value overrides");
  cmd->add_option("--steps", a->steps, "measurement iterations (default: eval.steps)")->check(integer_in(1, INT_MAX));
  cmd->add_option("--walkers", a->walkers, "walkers (default: as trained)")->check(integer_in(1, INT_MAX));
  cmd->add_option("--seed", a->seed, "random seed of the evaluation chain (default: the run's run.seed)")
      ->check([](const std::string& v) -> std::string {  // (CLI11 clamped larger ones silently)
        // the range of run.seed (it was 0 to 2^63 - 1 here, 0 to 2^64 - 1 there)
        const std::string bad = "must be an integer from 0 to " + std::to_string(std::numeric_limits<std::uint64_t>::max());
        if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos) return bad;
        try {
          (void)std::stoull(v);
          return "";
        } catch (const std::exception&) {  // out of range
          return bad;
        }
      });
  cmd->add_option("--molecule", a->molecule, "evaluate only this molecule of the run (default: every molecule)")
      ->check([](const std::string& v) {  // (an empty value evaluated every molecule)
        return v.find_first_not_of(" \t") == std::string::npos ? "names no molecule (give one of the run's names)" : "";
      });
  cmd->add_flag("--json", a->json, "print one JSON object (a list of objects for several molecules)");
  cmd->callback([a] { run_eval(*a); });
}

}  // namespace nnvmc::app
