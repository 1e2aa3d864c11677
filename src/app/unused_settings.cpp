#include "app/unused_settings.hpp"

#include <algorithm>
#include <utility>

#include <yaml-cpp/yaml.h>

#include "core/config_yaml.hpp"
#include "core/log.hpp"

namespace nnvmc::app {

namespace {

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
  // With nothing to train every optimizer setting but the budgets is without effect (checked first)
  std::vector<SettingBlock> blocks;
  if (config.optim.iterations == 0)
    blocks = {{"optim.iterations", true, ""},
              {"optim.minutes", true, ""},
              {"optim", false,
               "optim.iterations = 0 (nothing is trained now; config.yaml keeps it for a resume with more "
               "optim.iterations)"}};
  std::vector<SettingBlock> by_choice = {
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
      // (pretrain.basis with paulinet, or optim.lr with nothing to train, had no effect without a word, a user audit)
      {"pretrain.steps", true, ""},
      {"pretrain", config.pretrain.steps > 0,
       "pretrain.steps = 0" + std::string(config.model.type == "paulinet" ? " (paulinet's Hartree-Fock baseline is built in)"
                                          : !config.model.init_from.empty() ? " (model.init_from starts from trained weights)"
                                                                            : "")},
  };
  blocks.insert(blocks.end(), by_choice.begin(), by_choice.end());
  return blocks;
}

/// The block of `config` the setting `key` (a full key path) lies in; nullptr when none.
const SettingBlock* block_of(const std::vector<SettingBlock>& blocks, const std::string& key) {
  for (const auto& b : blocks)
    if (key == b.key || key.rfind(std::string(b.key) + ".", 0) == 0) return &b;  // (the first match decides)
  return nullptr;
}

/// The full key paths of the values `node` holds below `prefix` (a mapping's leaves).
void leaf_keys(const YAML::Node& node, const std::string& prefix, std::vector<std::string>& out) {
  if (!node.IsMap()) {
    out.push_back(prefix);
    return;
  }
  for (const auto& kv : node) leaf_keys(kv.second, prefix + (prefix.empty() ? "" : ".") + kv.first.Scalar(), out);
}

}  // namespace

/// Whether the setting `key` (a full key path) lies in a block `config` does not use.
bool unused_setting(const Config& config, const std::string& key) {
  const auto blocks = setting_blocks(config);
  const SettingBlock* b = block_of(blocks, key);
  return b != nullptr && !b->used;
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

}  // namespace nnvmc::app
