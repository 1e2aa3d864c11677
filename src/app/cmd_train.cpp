/// nnvmc train [CONFIG] key=value ... [--force] | nnvmc train --resume DIR [key=value ...]
#include <algorithm>
#include <exception>
#include <filesystem>
#include <map>
#include <iostream>
#include <optional>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "app/commands.hpp"
#include "app/run_args.hpp"
#include "core/config_diff.hpp"
#include "core/config_yaml.hpp"
#include "core/molecule_list.hpp"
#include "parallel/communicator.hpp"
#include "parallel/launcher.hpp"
#include "core/errors.hpp"
#include "core/log.hpp"
#include "core/run_name.hpp"
#include "io/directory_lock.hpp"
#include "io/output_kind.hpp"
#include "train/checkpoint.hpp"
#include "train/run_checkpoint.hpp"
#include "train/summary.hpp"
#include "train/trainer.hpp"

namespace nnvmc::app {

namespace {
namespace fs = std::filesystem;

/// Settings that choose how (and how long) a run is executed, not which Markov chain it follows: a resume may
/// change them without a warning (e.g. more threads, or the GPU for the later iterations).
/// (The chunk sizes split walkers whose random streams are their own: chunks change the chain only by the
/// rounding of sums over chunks.)
const char* const kExecutionSettings[] = {"run.threads",          "run.walker_threads",        "run.cuda_graphs",
                                          "run.memory_budget",    "run.checkpoint_every",      "run.device",
                                          "run.name",             "optim.iterations",          "optim.minutes",
                                          "optim.log_every",      "hamiltonian.chunk_walkers", "optim.sr.chunk_walkers"};

/// Keys whose change a resume refuses: the model (the parameters belong to it) and how a run
/// starts (pretraining, model.init_from), which a resumed run has done already.
const char* const kFixedOnResume[] = {"model.", "pretrain."};

/// The config of a resumed run: the recorded one with the overrides. It states every default, so
/// a new optim.type would keep the old optimizer's optim.lr, optim.lr_delay and
/// optim.determinant_balance: those take the new type's defaults unless an override gives them.
Config resumed_config(const std::string& yaml, const Config& recorded, const std::vector<std::string>& overrides,
                      const std::string& where) {
  // The type the overrides give, read before the whole config is: with the old type's values the
  // new type may not validate (adam's determinant_balance under kfac; a resume to kfac failed so).
  std::string type = recorded.optim.type;
  for (const auto& o : overrides) {
    const auto alone = config_yaml::override_tree(o);
    if (!alone) continue;  // (parse_config names it)
    const YAML::Node& given = *alone;  // const lookups add no keys
    if (given["optim"] && given["optim"].IsMap() && given["optim"]["type"] && given["optim"]["type"].IsScalar())
      type = given["optim"]["type"].Scalar();
  }
  if (type == recorded.optim.type) return parse_config(yaml, overrides, where);
  YAML::Node root = YAML::Load(yaml);
  for (const char* key : {"lr", "lr_delay", "determinant_balance"})
    if (std::none_of(overrides.begin(), overrides.end(),
                     [&](const std::string& o) { return override_sets(o, std::string("optim.") + key); }) &&
        root["optim"] && root["optim"].IsMap())
      root["optim"].remove(key);
  const Config config = parse_config(YAML::Dump(root), overrides, where);
  // (each value said as given or defaulted, and the state the old optimizer kept named: the note
  // called a given lr a default and listed every optimizer's state, a user audit)
  const auto origin = [&](const std::string& key) {
    const bool given =
        std::any_of(overrides.begin(), overrides.end(), [&](const std::string& o) { return override_sets(o, key); });
    return given ? "given" : "the new type's default";
  };
  static const std::map<std::string, std::string> state = {
      {"adam", "its moment estimates"}, {"kfac", "its curvature statistics"}, {"spring", "its previous step"}};
  const auto kept = state.find(recorded.optim.type);
  log::info(strfmt("resume: optim.type %s -> %s with optim.lr = %g (%s), optim.lr_delay = %g (%s)%s; %s",
                   recorded.optim.type.c_str(), config.optim.type.c_str(), config.optim.lr, origin("optim.lr"),
                   config.optim.lr_delay, origin("optim.lr_delay"),
                   config.model.type == "orbformer"
                       ? strfmt(", optim.determinant_balance = %g (%s)", config.optim.determinant_balance.value_or(0.0),
                                origin("optim.determinant_balance"))
                             .c_str()
                       : "",
                   kept != state.end()
                       ? (recorded.optim.type + "'s state (" + kept->second + ") is not carried over").c_str()
                       : (recorded.optim.type + " kept no state between steps").c_str()));
  return config;
}

/// @throws InputError naming the first key under kFixedOnResume, or sampler.walkers or run.seed,
/// that `now` changes.
void refuse_fixed_changes(const Config& recorded, const Config& now, const std::string& dir) {
  for (const auto& c : setting_changes(recorded, now)) {
    if (c.key == "sampler.walkers") {  // (it failed later, naming neither the key nor the resume)
      throw InputError("train --resume " + dir + ": 'sampler.walkers' cannot change on resume (" + c.before + " -> " +
                       c.after + "): the checkpoint holds the positions of " + c.before +
                       " walkers, whose chains go on; for another count, begin a new run with model.init_from "
                       "(nnvmc eval takes --walkers to measure with more or fewer)");
    }
    if (c.key == "run.seed") {  // (it used to be accepted with a warning, and changed only the molecule draws)
      throw InputError("train --resume " + dir + ": 'run.seed' cannot change on resume (" + c.before + " -> " +
                       c.after + "): the walkers' random streams continue from the checkpoint; for another seed, "
                       "begin a new run (with model.init_from to keep the parameters)");
    }
    const auto fixed = [&](const char* prefix) { return c.key.rfind(prefix, 0) == 0; };
    if (std::any_of(std::begin(kFixedOnResume), std::end(kFixedOnResume), fixed)) {
      throw InputError("train --resume " + dir + ": '" + c.key + "' cannot change on resume (" + c.before + " -> " +
                       c.after + "): the parameters belong to the model the run trained and its start is done; to "
                       "start from them with other training settings, begin a new run of the same model with "
                       "model.init_from");
    }
  }
}

/// Settings that act only when chains start, which a resumed run did long ago: the walkers'
/// first step size (the chains continue with the one they adapted) and the burn-in. A change is
/// named as having no effect and not recorded (found by a user audit: config.yaml recorded a step
/// size the run never used).
void keep_start_settings(const Config& recorded, Config& now) {
  const auto keep = [](const char* key, auto& value, const auto& before, const char* why) {
    if (value == before) return;
    log::warn(std::string(key) + " has no effect on resume (" + why + "); config.yaml keeps the run's value");
    value = before;
  };
  keep("sampler.step_size", now.sampler.step_size, recorded.sampler.step_size,
       "the chains continue with the step size they adapted");
  keep("sampler.burn_in", now.sampler.burn_in, recorded.sampler.burn_in, "the chains were burnt in when the run began");
}

/// The recorded config (YAML) of a run copied or moved to `dir`: when its run.output names
/// another directory (the one it was copied from, or an absolute path no longer there), it names
/// `dir` (made absolute), so the run continues there, config.yaml says so, and an override moving
/// it elsewhere is still refused. A relative run.output that does not resolve from here (resumed
/// from another working directory) is left as recorded: it says nothing of where the run is.
std::string relocated(const std::string& yaml, const std::string& where, const std::string& dir) {
  const fs::path was = resolve_output_dir(parse_config(yaml, {}, where));
  std::error_code ec;
  const bool there = fs::is_directory(was, ec);
  if (there ? fs::equivalent(was, dir, ec) || ec : !was.is_absolute()) return yaml;
  const std::string now = fs::absolute(dir, ec).lexically_normal().string();
  YAML::Node root = YAML::Load(yaml);
  root["run"]["output"] = now;
  log::info("the run was written in '" + was.string() + "'; it continues in '" + now + "', which config.yaml now names");
  return YAML::Dump(root);
}

/// The recorded config (YAML) of a resumed run whose molecules cannot be read from here (a
/// relative molecule file resumed from another working directory, a file moved or deleted): its
/// `system` becomes the molecules the checkpoint holds, inline in bohr, so the run continues
/// with them and config.yaml states them (found by a user audit: such a run could not be resumed
/// although its checkpoint holds every molecule). Unchanged when the molecules resolve;
/// `recorded` is `yaml` parsed.
std::string with_checkpoint_molecules(const std::string& yaml, const Config& recorded, const Checkpoint& c,
                                      const std::vector<std::string>& overrides) {
  // An override that gives the molecules (a moved file named again) is the user's answer.
  for (const char* key : {"system.molecule", "system.molecules", "system.dataset"})
    for (const auto& o : overrides)
      if (override_sets(o, key)) return yaml;
  try {
    const log::Quiet quiet;  // (the run resolves them again, with their warnings)
    resolve_molecules(recorded.system);
    return yaml;
  } catch (const InputError& e) {
    YAML::Node root = YAML::Load(yaml);
    YAML::Node system(YAML::NodeType::Map);
    system["molecules"] = YAML::Load(checkpoint_molecules(c));
    root["system"] = system;
    log::warn(std::string(e.what()) + ": the run continues with the molecule(s) its checkpoint holds, which "
              "config.yaml now states inline");
    return YAML::Dump(root);
  }
}

/// A block of settings and whether `config` uses it (another optimizer's, Laplacian's or
/// ansatz's settings are not used), with why not.
struct SettingBlock {
  const char* key;
  bool used;
  std::string why;
};

/// The blocks of settings that only some runs use, most specific first.
std::vector<SettingBlock> setting_blocks(const Config& config) {
  const std::string& optim = config.optim.type;
  const bool natural = optim == "sr" || optim == "minsr" || optim == "spring";
  return {
      {"optim.sr.chunk_walkers", natural || optim == "kfac", "optim.type = " + optim},
      // (the measure of a step under no constraint: bit-identical runs, a user audit)
      {"optim.sr.norm", natural && config.optim.sr.norm_constraint > 0,
       natural ? std::string("optim.sr.norm_constraint = 0 (no step bound to measure)") : "optim.type = " + optim},
      {"optim.sr", natural, "optim.type = " + optim},
      {"optim.spring", optim == "spring", "optim.type = " + optim},
      {"optim.kfac", optim == "kfac", "optim.type = " + optim},
      {"optim.beta1", optim == "adam", "optim.type = " + optim + " (an Adam setting)"},
      {"optim.beta2", optim == "adam", "optim.type = " + optim + " (an Adam setting)"},
      {"optim.epsilon", optim == "adam", "optim.type = " + optim + " (an Adam setting)"},
      {"hamiltonian.hutchinson", config.hamiltonian.laplacian == "hutchinson",
       "hamiltonian.laplacian = " + config.hamiltonian.laplacian},
      {"model.ferminet", config.model.type == "ferminet", "model.type = " + config.model.type},
      {"model.psiformer", config.model.type == "psiformer", "model.type = " + config.model.type},
      {"model.paulinet", config.model.type == "paulinet", "model.type = " + config.model.type},
      {"model.orbformer", config.model.type == "orbformer", "model.type = " + config.model.type},
      {"model.hf", config.model.type == "hf", "model.type = " + config.model.type},
  };
}

/// The block of `config` the setting `key` (a full key path) lies in; nullptr when none.
const SettingBlock* block_of(const std::vector<SettingBlock>& blocks, const std::string& key) {
  for (const auto& b : blocks)
    if (key == b.key || key.rfind(std::string(b.key) + ".", 0) == 0) return &b;  // (the first match decides)
  return nullptr;
}

/// Whether the setting `key` (a full key path) lies in a block `config` does not use.
bool unused_setting(const Config& config, const std::string& key) {
  const auto blocks = setting_blocks(config);
  const SettingBlock* b = block_of(blocks, key);
  return b != nullptr && !b->used;
}

/// The full key paths of the values `node` holds below `prefix` (a mapping's leaves).
void leaf_keys(const YAML::Node& node, const std::string& prefix, std::vector<std::string>& out) {
  if (!node.IsMap()) {
    out.push_back(prefix);
    return;
  }
  for (const auto& kv : node) leaf_keys(kv.second, prefix + (prefix.empty() ? "" : ".") + kv.first.Scalar(), out);
}

/// Command-line overrides of a block the run does not use (another optimizer's, Laplacian's or
/// ansatz's settings) are named in a warning: `optim.sr.damping=1` without `optim.type=sr` trained
/// with Adam without a word (a user audit), also on resume. A mapping is judged by each setting it
/// gives: only those without effect are named (`optim.sr={norm: fisher, norm_constraint: 0}` was
/// said to have no effect as a whole, a review). (A config file may hold every block, as `nnvmc
/// config` prints them: only overrides, which the user just typed, are checked.)
void warn_of_unused_overrides(const Config& config, const std::vector<std::string>& overrides) {
  const auto blocks = setting_blocks(config);
  for (const auto& o : overrides) {
    const auto alone = config_yaml::override_tree(o);
    if (!alone) continue;  // (parse_config named it)
    std::vector<std::string> keys;
    leaf_keys(*alone, "", keys);
    std::vector<std::pair<std::string, const SettingBlock*>> unused;
    for (const auto& k : keys)
      if (const SettingBlock* b = block_of(blocks, k); b != nullptr && !b->used) unused.emplace_back(k, b);
    if (unused.empty()) continue;
    const bool all_in_one = unused.size() == keys.size() &&
                            std::all_of(unused.begin(), unused.end(), [&](const auto& u) { return u.second == unused[0].second; });
    if (all_in_one) {
      log::warn("'" + o + "' has no effect with " + unused[0].second->why);
    } else {
      for (const auto& [k, b] : unused) log::warn("'" + o + "': " + k + " has no effect with " + b->why);
    }
  }
}

/// A run's config.yaml edited by hand since its checkpoint is named in a warning: a resume takes
/// its settings from the checkpoint and the overrides, and rewrites config.yaml (found by a user
/// audit: the edits were discarded without a word).
void warn_of_edited_config(const std::string& dir, const Config& recorded) {
  const std::string path = (fs::path(dir) / "config.yaml").string();
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return;
  std::string edits;
  try {
    auto changes = setting_changes(recorded, load_config(path));
    std::erase_if(changes, [](const SettingChange& c) { return c.key == "run.output"; });  // (a copied run)
    edits = describe_changes(changes);
  } catch (const InputError& e) {
    edits = std::string("it does not load: ") + e.what();
  }
  if (!edits.empty())
    log::warn(path + " differs from the run's checkpoint (" + edits + "): a resume takes its settings from the "
              "checkpoint and key=value overrides (e.g. nnvmc train --resume " + dir + " optim.iterations=N), and "
              "rewrites config.yaml");
}

/// Settings a resumed run changes, added or removes (beyond how it is executed and the final
/// evaluation), as "optim.type adam -> spring, ..." ("" when none): the run is then no longer one
/// Markov chain under one setting, and its config.yaml describes only the later iterations.
std::string changed_settings(const Config& recorded, const Config& now) {
  const auto ignored = [&now](const SettingChange& c) {
    // (the determinant-balance penalty acts on an orbformer's determinant weights only)
    if (c.key == "optim.determinant_balance" && now.model.type != "orbformer") return true;
    // (another optimizer's setting changes nothing: it was recorded as a change, a user audit)
    if (unused_setting(now, c.key)) return true;
    return c.key.rfind("eval.", 0) == 0 ||
           std::find(std::begin(kExecutionSettings), std::end(kExecutionSettings), c.key) != std::end(kExecutionSettings);
  };
  auto changes = setting_changes(recorded, now);
  changes.erase(std::remove_if(changes.begin(), changes.end(), ignored), changes.end());
  return describe_changes(changes);
}

/// A damaged latest checkpoint `ckpt` of the run `resume` (train --resume): the run continues from
/// the one before it, which takes its place, the damaged one kept as checkpoint.h5.damaged. Rank 0
/// alone renames (every rank renaming in turn put the good file aside: a review), the others wait
/// and share its failure. @return the checkpoint rank 0 read (empty on the other ranks)
/// @throws InputError when another process holds the run or a rename fails; CheckpointError when
/// neither checkpoint can be read.
std::optional<Checkpoint> replace_damaged_checkpoint(const std::string& resume, const std::string& ckpt) {
  auto& comm = parallel::world();
  std::exception_ptr failed;
  std::optional<Checkpoint> read;
  if (comm.is_root()) try {
      read.emplace();
      if (const std::string usable = readable_checkpoint("--resume " + resume, ckpt, &*read); usable != ckpt) {
        const fs::path dir = fs::path(ckpt).parent_path();
        if (std::string pid; io::lock_held(dir.string(), &pid))
          throw InputError("train --resume " + resume + ": in use by another nnvmc process" +
                           (pid.empty() ? "" : " (pid " + pid + ")"));
        std::error_code ec;
        fs::rename(ckpt, ckpt + ".damaged", ec);
        if (!ec) fs::rename(usable, ckpt, ec);
        if (ec)
          throw InputError("train --resume " + resume + ": cannot put " + usable + " in place of the damaged " + ckpt +
                           ": " + ec.message());
        log::warn("--resume " + resume + ": the damaged checkpoint is kept as " + ckpt + ".damaged");
      }
    } catch (...) {
      failed = std::current_exception();
    }
  if (comm.any(bool(failed))) {
    if (failed) std::rethrow_exception(failed);
    throw CheckpointError("train --resume " + resume + ": rank 0 could not read the run's checkpoint");
  }
  return read;
}

}  // namespace

void add_train_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("train", "Train a wavefunction (VMC) from a YAML config or key=value settings");
  auto args = std::make_shared<std::vector<std::string>>();
  auto resume = std::make_shared<std::string>();
  auto force = std::make_shared<bool>(false);
  cmd->add_option("args", *args,
                  "CONFIG.yaml followed by key.path=value overrides (without CONFIG: the defaults and the overrides, "
                  "e.g. system.molecule=h2)");
  cmd->add_option("--resume", *resume, "continue the run in this output directory");
  cmd->add_flag("--force", *force, "start over in an output directory that holds a run (run.overwrite=true)");
  cmd->callback([args, resume, force] {
    RunArgs ra = split_run_args(*args);
    Trainer::install_signal_handlers();
    std::unique_ptr<Trainer> trainer;
    if (!resume->empty()) {
      if (!ra.file.empty())
        throw InputError("train --resume DIR takes key=value overrides only, not the file '" + ra.file +
                         "' (the run's config is in its checkpoint)");
      if (*force) throw InputError("train: --force starts a new run; it cannot be combined with --resume");
      const std::string ckpt = run_checkpoint("--resume", *resume);
      std::optional<Checkpoint> read = replace_damaged_checkpoint(*resume, ckpt);
      // A run continues in its directory: a checkpoint file of another name made its folder the
      // run's, with results written and a config.yaml there replaced (a user audit)
      if (fs::path(ckpt).filename() != "checkpoint.h5")
        throw InputError("train --resume " + *resume + ": give a run's directory (or its checkpoint.h5); a run "
                         "continues where its checkpoint.h5 is, writing config.yaml and result.h5 beside it. To train "
                         "on from this file's parameters in a new run, give model.init_from=" + *resume);
      const Checkpoint c = read ? std::move(*read) : load_checkpoint(ckpt);
      const std::string dir = fs::path(ckpt).parent_path().string();
      const std::string here = relocated(c.config_yaml, ckpt + ":config", dir.empty() ? "." : dir);
      const Config recorded_here = parse_config(here, {}, ckpt + ":config");
      warn_of_edited_config(dir.empty() ? "." : dir, recorded_here);
      const std::string yaml = with_checkpoint_molecules(here, recorded_here, c, ra.overrides);
      const Config recorded = yaml == here ? recorded_here : parse_config(yaml, {}, ckpt + ":config");
      Config config = resumed_config(yaml, recorded, ra.overrides, ckpt + ":config");
      refuse_fixed_changes(recorded, config, *resume);
      keep_start_settings(recorded, config);
      warn_of_unused_overrides(config, ra.overrides);
      if (config.run.name != recorded.run.name) check_run_name(config.run.name);  // (as load_config checks a new run's)
      // A resumed run writes where its checkpoint is: overrides (in whatever form) may not move it.
      const bool moved = resolve_output_dir(config) != resolve_output_dir(recorded);
      if (moved)
        throw InputError("train --resume " + *resume + ": run.output cannot be changed on resume (the run continues "
                         "in its own directory; copy the directory to continue it elsewhere)");
      if (config.run.overwrite != recorded.run.overwrite)
        throw InputError("train --resume " + *resume + ": run.overwrite cannot be changed on resume (it belongs to how "
                         "the run started: --force starts a new run, and cannot be combined with --resume)");
      trainer = std::make_unique<Trainer>(config, ckpt);  // refuses another model or molecule, or a run in use, first
      log::info(strfmt("resuming %s at iteration %ld", resume->c_str(), static_cast<long>(c.iteration)));
      // (the trainer checks optim.minutes before each iteration: a spent budget trains none either)
      const bool iterations_done = config.optim.iterations <= c.iteration;
      const bool minutes_spent = config.optim.minutes > 0 && c.trained_seconds >= config.optim.minutes * 60.0;
      const bool nothing_to_train = iterations_done || minutes_spent;
      if (const std::string changed = changed_settings(recorded, config); !changed.empty()) {
        log::warn("resuming with changed settings from iteration " + std::to_string(c.iteration) + ": " + changed +
                  (!nothing_to_train
                       ? " (config.yaml will hold the new ones; summary.json's resumes_with_changes lists every such "
                         "change)"
                       : " (with nothing to train they change nothing: config.yaml keeps the checkpoint's settings)"));
        if (!nothing_to_train) trainer->record_resume_changes(changed);  // (no iteration, no change to the chain)
      }
      if (iterations_done)
        log::warn(strfmt("optim.iterations = %ld, and the run has %ld already: nothing to train, only the final "
                         "evaluation (raise optim.iterations to train on)",
                         static_cast<long>(config.optim.iterations), static_cast<long>(c.iteration)));
      else if (minutes_spent)
        log::warn(strfmt("optim.minutes = %g, and the run has trained %.2f min already: nothing to train, only the "
                         "final evaluation (raise optim.minutes to train on)",
                         config.optim.minutes, c.trained_seconds / 60.0));
    } else {
      if (ra.file.empty() && ra.overrides.empty())  // (the default LiH was never asked for)
        throw InputError("train: give a CONFIG file, key=value settings (e.g. nnvmc train system.molecule=h2 "
                         "optim.iterations=200), or --resume DIR");
      if (*force) ra.overrides.push_back("run.overwrite=true");
      const Config config = ra.file.empty() ? config_from_overrides(ra.overrides) : load_config(ra.file, ra.overrides);
      check_model_type(config, ra);
      warn_of_unused_overrides(config, ra.overrides);
      // A comparison's cells are its own to start (a run started in a cell that had not begun made
      // the comparison continue a run of another molecule); continuing one with --resume is fine.
      const fs::path out = fs::absolute(resolve_output_dir(config)).lexically_normal();
      if (out.parent_path().filename() == "cells")
        if (const std::string marker = io::comparison_marker(out.parent_path().parent_path().string()); !marker.empty())
          throw InputError("run.output: '" + out.string() + "' is a cell of the comparison in '" +
                           out.parent_path().parent_path().string() + "' (" + marker +
                           "); run the comparison to start it, or choose another run.output");
      trainer = std::make_unique<Trainer>(config);
    }
    const auto& s = trainer->setup();
    int64_t n_params = 0;
    for (const auto& p : s.wf->parameters()) n_params += p.numel();
    const std::string what = s.molecules.size() == 1 ? s.molecules[0].system.electron_summary()
                                                     : strfmt("%zu molecules", s.molecules.size());
    log::info(strfmt("%s, model %s (%ld parameters), %d walkers%s, %s, output %s", what.c_str(),
                     s.config.model.type.c_str(), static_cast<long>(n_params), s.config.sampler.walkers,
                     s.molecules.size() == 1 ? "" : " per molecule", parallel::world().describe().c_str(),
                     trainer->output_dir().c_str()));
    if (s.molecules.size() > 1)
      for (const auto& m : s.molecules) log::info("  " + m.system.electron_summary());
    const TrainOutcome out = trainer->run();
    // The final evaluation is the run's result: on stdout, as `nnvmc eval` prints it, so that
    // --log-level warn (progress off) still shows it.
    if (parallel::world().is_root()) {
      const auto& mols = trainer->setup().molecules;
      std::string text;
      for (std::size_t i = 0; i < out.evals.size() && i < mols.size(); ++i)
        text += (mols.size() > 1 ? mols[i].name() + ":\n" : "") + eval_text(out.evals[i]);
      std::cout << text << std::flush;
    }
    log::info("time per stage:");
    for (const auto& [stage, e] : trainer->timers().stages())
      log::info(strfmt("  %-13s %8.2f s  (%ld calls)", stage.c_str(), e.seconds, e.calls));
    if (parallel::world().size() > 1)
      log::info(strfmt("  time inside MPI collectives on rank 0 (incl. waiting for other ranks): %.2f s, %d ranks",
                       parallel::world().seconds_in_collectives(), parallel::world().size()));
    if (out.interrupted) {
      const int ranks = parallel::world().size();  // (a checkpoint resumes with any number of ranks)
      throw Error("interrupted; resume with: " + parallel::launch_prefix(ranks) + "nnvmc train --resume " +
                  trainer->output_dir() + (ranks > 1 ? "  (or with any other number of ranks)" : ""));
    }
  });
}

}  // namespace nnvmc::app
