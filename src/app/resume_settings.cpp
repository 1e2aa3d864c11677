#include "app/resume_settings.hpp"

#include <algorithm>
#include <filesystem>
#include <map>

#include <yaml-cpp/yaml.h>

#include "app/unused_settings.hpp"
#include "core/config_diff.hpp"
#include "core/config_yaml.hpp"
#include "core/errors.hpp"
#include "core/log.hpp"

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

}  // namespace

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

}  // namespace nnvmc::app
