#include "core/config.hpp"
#include "core/run_name.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include "core/config_yaml.hpp"
#include "core/elements.hpp"
#include "core/system.hpp"
#include "core/yaml_document.hpp"

namespace nnvmc {
namespace config_yaml {

int edit_distance(const std::string& a, const std::string& b) {
  std::vector<int> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string suggestion(const std::string& key, const std::vector<std::string>& candidates, const std::string& prefix) {
  std::string best;
  int best_d = 1 << 30;
  for (const auto& c : candidates) {
    const int d = edit_distance(key, c);
    if (d < best_d) best_d = d, best = c;
  }
  if (!best.empty() && best_d <= std::max<int>(2, static_cast<int>(key.size()) / 3))
    return " (did you mean '" + (prefix.empty() ? best : prefix + "." + best) + "'?)";
  std::string all;
  for (const auto& c : candidates) all += (all.empty() ? "" : ", ") + c;
  return " (valid keys: " + all + ")";
}

std::string location(const YAML::Node& node, const std::string& where) {
  if (node.Mark().is_null() || node.Mark().line < 0) return where;
  if (where.rfind("override '", 0) == 0) return where;  // (one line: "override 'k=v':1:" said nothing more)
  return where + ":" + std::to_string(node.Mark().line + 1);
}

void Reader::check_unknown() const {
  for (const auto& kv : map_) {
    if (!kv.first.IsScalar())
      throw ConfigError(location(kv.first, where_) + ": '" + (path_.empty() ? std::string("<top>") : path_) +
                        "' has a key that is not a plain name");
    const auto key = kv.first.Scalar();
    if (std::find(known_.begin(), known_.end(), key) == known_.end()) {
      const std::string full = path_.empty() ? key : path_ + "." + key;
      // Another kind of file given as a run config: say which (its keys are all unknown here)
      // (not when this reader reads that kind: a comparison file's misspelled key was told to run
      // with 'nnvmc compare FILE', which the user had done, a user audit)
      const auto reads = [&](const char* k) { return std::find(known_.begin(), known_.end(), k) != known_.end(); };
      std::string kind;
      if (path_.empty() && !reads("ansatze") && (map_["ansatze"] || map_["references"] || map_["reference_basis"]))
        kind = "; this looks like a comparison file: run it with 'nnvmc compare FILE'";
      else if (path_.empty() && !reads("atoms") && map_["atoms"])
        kind = "; this looks like a molecule file: give it as system.molecule=FILE in a run config";
      throw ConfigError(location(kv.first, where_) + ": unknown key '" + full + "'" +
                        suggestion(key, known_, path_) + kind);
    }
  }
}

namespace {
void merge_at(YAML::Node& root, const std::vector<std::string>& parts, const YAML::Node& value,
              const std::string& assignment);
}  // namespace

void apply_override(YAML::Node& root, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw ConfigError("override '" + assignment + "' must look like key.path=value");
  const std::string path = assignment.substr(0, eq);
  // an empty value would read as null, i.e. the key's default (e.g. `system.molecule=` trains LiH)
  if (assignment.find_first_not_of(" \t", eq + 1) == std::string::npos)
    throw ConfigError("override '" + assignment + "': no value after '=' (to use the default, leave the key out)");
  YAML::Node value;
  try {
    value = YAML::Load(assignment.substr(eq + 1));
  } catch (const YAML::Exception& e) {
    throw ConfigError("override '" + assignment + "': malformed value: " + e.msg);
  }
  // yaml-cpp stops at the end of a bracketed or quoted value and ignores what follows it
  // ("[h2, he], li" read as [h2, he]): the value must be the whole text
  const std::string text = assignment.substr(eq + 1);
  if (const auto first = text.find_first_not_of(" \t"); std::string("[{\"'").find(text[first]) != std::string::npos) {
    bool whole = false;
    try {
      const YAML::Node wrapped = YAML::Load("[" + text + "\n]");
      whole = wrapped.IsSequence() && wrapped.size() == 1;
    } catch (const YAML::Exception&) {
    }
    if (!whole)
      throw ConfigError("override '" + assignment + "': text after the " +
                        (text[first] == '[' ? "list" : text[first] == '{' ? "mapping" : "quoted string") +
                        " (a list is one bracketed value, e.g. system.molecules=[h2, he, li]; one override per "
                        "argument)");
  }
  check_unique_keys(value, "override '" + assignment + "'");
  std::vector<std::string> parts;
  std::stringstream ss(path);
  for (std::string p; std::getline(ss, p, '.');) parts.push_back(p);
  if (root.IsDefined() && !root.IsNull() && !root.IsMap())
    throw ConfigError("override '" + assignment + "': the document is not a mapping of keys");
  merge_at(root, parts, value, assignment);
}

std::optional<YAML::Node> override_tree(const std::string& assignment) {
  YAML::Node alone(YAML::NodeType::Map);
  try {
    apply_override(alone, assignment);
  } catch (const ConfigError&) {
    return std::nullopt;
  }
  return alone;
}

namespace {
/// The node at `parts` below `root`, or an undefined node (adds no key).
YAML::Node node_at(const YAML::Node& root, const std::vector<std::string>& parts) {
  YAML::Node node = root;
  for (const auto& p : parts) {
    if (!node.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
    const YAML::Node child = static_cast<const YAML::Node&>(node)[p];
    if (!child) return child;
    node.reset(child);  // rebinds the handle (operator= would write into the node)
  }
  return node;
}

/// Sets (or, for a mapping into a mapping, merges) `value` at the key path `parts` of `root`,
/// copying shared nodes on the way. `assignment` names the override in errors.
void merge_at(YAML::Node& root, const std::vector<std::string>& parts, const YAML::Node& value,
              const std::string& assignment) {
  // A mapping given for a mapping merges into it, key by key (`sampler={walkers: 8}` changes
  // the walkers only); anything else replaces what is there.
  if (value.IsMap()) {
    const YAML::Node old = node_at(root, parts);
    if (old && old.IsMap()) {
      for (const auto& kv : value) {
        if (!kv.first.IsScalar())
          throw ConfigError("override '" + assignment + "': a key that is not a plain name");
        auto sub = parts;
        sub.push_back(kv.first.Scalar());
        merge_at(root, sub, kv.second, assignment);
      }
      return;
    }
  }
  // yaml-cpp nodes are handles, and a node may be shared: a YAML alias (*x) is its anchor's node,
  // and a comparison's cells may hold the same axis mapping. Writing into one would change
  // every place that shares it, so each mapping on the path is copied into a fresh slot of its
  // parent (copy on write; its children are shared, not copied, and keep their source lines),
  // and the value is set in a fresh slot. Every new node is made through a handle of root's
  // document (a separately built YAML::Node(Map) would live in another memory holder).
  std::vector<YAML::Node> chain{root};
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    const YAML::Node old = static_cast<const YAML::Node&>(chain.back())[parts[i]];  // (adds no key)
    if (old && !old.IsNull() && !old.IsMap())
      throw ConfigError("override '" + assignment + "': '" + parts[i] + "' is not a mapping");
    chain.back().remove(parts[i]);
    YAML::Node slot = chain.back()[parts[i]];  // new and unshared
    slot = YAML::Node(YAML::NodeType::Map);     // writes only the new slot
    if (old && old.IsMap())
      for (const auto& kv : old) slot[kv.first] = kv.second;
    chain.push_back(slot);
  }
  chain.back().remove(parts.back());
  chain.back()[parts.back()] = value;
}
}  // namespace

}  // namespace config_yaml

bool is_device_name(const std::string& text) {
  static const std::regex device("cpu|cuda(:[0-9]{1,3})?");
  return std::regex_match(text, device);
}

std::uint64_t parse_bytes(const std::string& text, const std::string& key) {
  // a decimal number (no hex, inf or nan, which std::stod would take) and an optional unit
  static const std::regex form(R"(\s*((?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*)");
  const std::string usage = "'" + key + "' must be a positive byte count like 2GiB or 500MB, got '" + text + "'";
  std::smatch m;
  if (!std::regex_match(text, m, form)) throw ConfigError(usage);
  const std::string given = m[2].str();
  const bool has_capital = std::any_of(given.begin(), given.end(), [](char ch) { return std::isupper(static_cast<unsigned char>(ch)); });
  if (given.size() > 1 && given.back() == 'b' && has_capital) {  // Mb, Gib: bits by the usual convention (mb, gib: bytes)
    std::string bytes_unit = given.substr(0, given.size() - 1) + "B";
    bytes_unit[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(bytes_unit[0])));
    throw ConfigError("'" + key + "' = '" + text + "': '" + given + "' reads as bits; write bytes with a capital B (" +
                      bytes_unit + ")");
  }
  std::string unit = given;
  std::transform(unit.begin(), unit.end(), unit.begin(), ::tolower);
  static const std::map<std::string, double> multiplier = {
      {"", 1},           {"b", 1},           {"k", 1e3},          {"kb", 1e3},
      {"m", 1e6},        {"mb", 1e6},        {"g", 1e9},          {"gb", 1e9},
      {"t", 1e12},       {"tb", 1e12},       {"kib", 1024.0},     {"mib", 1024.0 * 1024},
      {"gib", 1024.0 * 1024 * 1024},         {"tib", 1024.0 * 1024 * 1024 * 1024}};
  const auto it = multiplier.find(unit);
  if (it == multiplier.end()) throw ConfigError(usage + " (units: B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)");
  const double bytes = std::strtod(m[1].str().c_str(), nullptr) * it->second;
  if (!(bytes >= 1)) throw ConfigError(usage);
  if (it->second == 1 && bytes != std::floor(bytes))  // "1.9" is no byte count: a unit was left out
    throw ConfigError("'" + key + "' = '" + text + "' is a fraction of a byte (bytes are whole); for larger units say so, e.g. " + m[1].str() + "GiB");
  if (!(bytes < 9.2e18))  // also inf: beyond any memory and beyond a 64-bit count
    throw ConfigError("'" + key + "' = '" + text + "' is too large");
  return static_cast<std::uint64_t>(bytes);
}

int OrbformerOptions::max_atomic_number() const {
  const std::string key = "model.orbformer.elements";
  const auto dash = elements.find('-');
  std::string last = elements;
  if (dash != std::string::npos) {
    if (elements.substr(0, dash) != "H" && elements.substr(0, dash) != "h")
      throw ConfigError("'" + key + "' must be a range starting at H, like H-F, got '" + elements + "'");
    last = elements.substr(dash + 1);
  }
  try {
    return atomic_number(last);
  } catch (const InputError&) {
    throw ConfigError("'" + key + "': unknown element '" + last + "' in '" + elements + "'");
  }
}

namespace {
void require(bool ok, const std::string& key, const std::string& what) {
  if (!ok) throw ConfigError("'" + key + "' " + what);
}
void require_one_of(const std::string& v, const std::vector<std::string>& allowed,
                    const std::string& key) {
  if (std::find(allowed.begin(), allowed.end(), v) != allowed.end()) return;
  std::string all;
  for (const auto& a : allowed) all += (all.empty() ? "" : ", ") + a;
  throw ConfigError("'" + key + "' must be one of " + all + ", got '" + v + "'");
}
}  // namespace

void require_walkers_to_train(const Config& c) {
  if (c.optim.iterations > 0 && c.sampler.walkers < 2)
    throw ConfigError("'sampler.walkers' must be at least 2 to train (the energy gradient is a covariance over the "
                      "walkers: one walker gives 0)");
}

void validate(const Config& c) {
  require(c.sampler.walkers > 0, "sampler.walkers", "must be > 0");
  require(c.sampler.steps_per_iteration > 0, "sampler.steps_per_iteration", "must be > 0");
  require(c.sampler.burn_in >= 0, "sampler.burn_in", "must be >= 0");
  require(c.sampler.step_size > 0, "sampler.step_size", "must be > 0");
  require(c.sampler.target_acceptance > 0 && c.sampler.target_acceptance < 1,
          "sampler.target_acceptance", "must be in (0, 1)");
  require_one_of(c.hamiltonian.laplacian, {"jvp", "reverse", "hutchinson", "forward"}, "hamiltonian.laplacian");
  require(c.hamiltonian.hutchinson.probes > 0 && c.hamiltonian.hutchinson.probes <= 4096,
          "hamiltonian.hutchinson.probes", "must be between 1 and 4096");
  require_one_of(c.hamiltonian.hutchinson.distribution, {"rademacher", "gaussian"},
                 "hamiltonian.hutchinson.distribution");
  require(c.hamiltonian.chunk_walkers >= 0, "hamiltonian.chunk_walkers", "must be >= 0");
  require_one_of(c.optim.type, {"adam", "sr", "minsr", "spring", "kfac"}, "optim.type");
  require(c.optim.kfac.damping > 0, "optim.kfac.damping", "must be > 0");
  require(c.optim.kfac.norm_constraint >= 0, "optim.kfac.norm_constraint", "must be >= 0");
  require(c.optim.kfac.cov_ema_decay >= 0 && c.optim.kfac.cov_ema_decay < 1, "optim.kfac.cov_ema_decay",
          "must be in [0, 1)");
  require(c.optim.sr.damping >= 0, "optim.sr.damping", "must be >= 0");
  require(c.optim.sr.norm_constraint >= 0, "optim.sr.norm_constraint", "must be >= 0");
  require_one_of(c.optim.sr.norm, {"fisher", "euclidean"}, "optim.sr.norm");
  require(c.optim.sr.chunk_walkers >= 0, "optim.sr.chunk_walkers", "must be >= 0");
  require(c.optim.spring.momentum >= 0 && c.optim.spring.momentum < 1, "optim.spring.momentum",
          "must be in [0, 1)");
  require(c.optim.lr > 0, "optim.lr", "must be > 0");
  require(c.optim.beta1 >= 0 && c.optim.beta1 < 1, "optim.beta1", "must be in [0, 1)");
  require(c.optim.beta2 >= 0 && c.optim.beta2 < 1, "optim.beta2", "must be in [0, 1)");
  require(c.optim.epsilon > 0, "optim.epsilon", "must be > 0");
  require(c.pretrain.lr > 0, "pretrain.lr", "must be > 0");
  require(c.optim.lr_delay > 0, "optim.lr_delay", "must be > 0");
  require(c.optim.iterations >= 0, "optim.iterations", "must be >= 0");
  require(c.optim.minutes >= 0 && std::isfinite(c.optim.minutes), "optim.minutes", "must be >= 0 (0: no limit)");
  require(c.optim.clip_width >= 0 && std::isfinite(c.optim.clip_width), "optim.clip_width", "must be >= 0 (0: no clipping)");
  require(c.optim.log_every > 0, "optim.log_every", "must be > 0");
  require(c.optim.max_consecutive_failures > 0, "optim.max_consecutive_failures", "must be > 0");
  require(c.optim.molecules_per_step >= 0, "optim.molecules_per_step", "must be >= 0 (0: all molecules)");
  if (c.optim.determinant_balance) {
    require(*c.optim.determinant_balance >= 0, "optim.determinant_balance", "must be >= 0 (0 disables it)");
    require(*c.optim.determinant_balance == 0 || c.optim.type == "adam" || c.optim.sr.damping > 0,
            "optim.determinant_balance", "> 0 with a natural-gradient optimizer needs optim.sr.damping > 0");
    require(*c.optim.determinant_balance == 0 || c.optim.type != "kfac", "optim.determinant_balance",
            "is not available with optim.type: kfac (set it to 0, or use adam, sr, minsr or spring)");
  }
  {
    std::string given;  // the molecule keys given, named in the message
    for (const auto& [key, set] : {std::pair<const char*, bool>{"system.molecule", bool(c.system.molecule)},
                                   {"system.molecules", bool(c.system.molecules)},
                                   {"system.dataset", bool(c.system.dataset)}})
      if (set) given += std::string(given.empty() ? "" : " and ") + key;
    require(int(bool(c.system.molecule)) + int(bool(c.system.molecules)) + int(bool(c.system.dataset)) <= 1,
            "system", "has " + given + ": give one of system.molecule, system.molecules, system.dataset");
  }
  require(c.pretrain.steps >= 0, "pretrain.steps", "must be >= 0");
  require(c.eval.steps >= 0, "eval.steps", "must be >= 0");
  require(c.eval.burn_in >= 0, "eval.burn_in", "must be >= 0");
  require_one_of(c.run.dtype, {"float64", "float32"}, "run.dtype");
  require(is_device_name(c.run.device), "run.device",
          "must be cpu, cuda or cuda:N");
  // (an empty one passed, and train failed with "cannot make absolute path", exit 1)
  require(!c.run.output.empty(), "run.output", "must name a directory (it is empty)");
  require(c.run.checkpoint_every >= 0, "run.checkpoint_every", "must be >= 0");
  require(c.run.threads >= 0, "run.threads", "must be >= 0");
  // (tens of thousands of OpenMP threads crash or hang the process)
  const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  require(c.run.threads <= 4 * cores, "run.threads",
          "must be at most 4 x the " + std::to_string(cores) + " hardware threads of this machine (0: all of them)");
  if (c.run.memory_budget != "auto") parse_bytes(c.run.memory_budget, "run.memory_budget");
  const auto& f = c.model.ferminet;
  if (f.hidden_dims) {
    require(!f.hidden_dims->empty(), "model.ferminet.hidden_dims", "must have at least one layer");
    require(f.hidden_dims->size() <= 64, "model.ferminet.hidden_dims", "must have at most 64 layers");
    for (const auto& l : *f.hidden_dims)
      require(l[0] > 0 && l[1] > 0 && l[0] <= 65536 && l[1] <= 65536, "model.ferminet.hidden_dims",
              "widths must be between 1 and 65536");
  }
  if (f.determinants)
    require(*f.determinants > 0 && *f.determinants <= 1024, "model.ferminet.determinants",
            "must be between 1 and 1024");
  require_one_of(f.envelope, {"isotropic"}, "model.ferminet.envelope");
  // The other ansätze's sizes have FermiNet's bounds (widths up to 65536, 64 layers, 1024
  // determinants): larger ones passed and ended in the allocator, or the kernel's OOM killer.
  const auto width = [](long long value, const std::string& key) {
    require(value > 0 && value <= 65536, key, "must be between 1 and 65536");
  };
  const auto depth = [](int value, const std::string& key, int least) {
    require(value >= least && value <= 64, key, "must be between " + std::to_string(least) + " and 64");
  };
  const auto& p = c.model.paulinet;
  require(p.rc_scaling > 0, "model.paulinet.rc_scaling", "must be > 0");
  require(p.cusp_alpha > 0, "model.paulinet.cusp_alpha", "must be > 0");
  depth(p.interactions, "model.paulinet.interactions", 0);
  // (without message passing the embeddings depend on spin alone: a Jastrow and backflow of
  // them are a constant and a uniform scale, trainable parameters that change nothing)
  require(c.model.type != "paulinet" || p.interactions > 0 || (!p.jastrow && !p.backflow),
          "model.paulinet.interactions",
          "0 leaves the embeddings functions of spin alone, so the Jastrow and backflow change nothing; give at least "
          "1, or set model.paulinet.jastrow and backflow to false");
  width(p.embedding_dim, "model.paulinet.embedding_dim");
  width(p.kernel_dim, "model.paulinet.kernel_dim");
  width(p.distance_features, "model.paulinet.distance_features");
  require(p.cutoff > 0, "model.paulinet.cutoff", "must be > 0");
  depth(p.jastrow_layers, "model.paulinet.jastrow_layers", 1);
  depth(p.backflow_layers, "model.paulinet.backflow_layers", 1);
  // PauliNet's orbitals are the Hartree-Fock orbitals times a backflow that starts near 1.
  require(c.model.type != "paulinet" || c.pretrain.steps == 0, "pretrain.steps",
          "must be 0 for model.type paulinet: its Hartree-Fock baseline is built in (no HF pretraining)");
  // (checked with the config, so `nnvmc config` says it too: only `train` did)
  require(c.model.init_from.empty() || c.pretrain.steps == 0, "pretrain.steps",
          "must be 0 with model.init_from (pretraining would overwrite the loaded parameters)");
  const auto& o = c.model.orbformer;
  o.max_atomic_number();
  for (const auto& [value, key] : std::vector<std::pair<int, const char*>>{
           {o.heads, "heads"}, {o.head_dim, "head_dim"}, {o.featurization_heads, "featurization_heads"},
           {o.envelopes_per_nucleus, "envelopes_per_nucleus"}, {o.nuclear_feature_dim, "nuclear_feature_dim"},
           {o.nuclear_heads, "nuclear_heads"}, {o.orbital_heads, "orbital_heads"},
           {o.orbital_head_dim, "orbital_head_dim"}})
    width(value, std::string("model.orbformer.") + key);
  require(o.determinants > 0 && o.determinants <= 1024, "model.orbformer.determinants", "must be between 1 and 1024");
  for (const auto& [value, key] : std::vector<std::pair<int, const char*>>{
           {o.layers, "layers"}, {o.nuclear_layers, "nuclear_layers"}, {o.orbital_layers, "orbital_layers"}})
    depth(value, std::string("model.orbformer.") + key, 0);
  width(static_cast<long long>(o.heads) * o.head_dim, "model.orbformer.heads * head_dim");  // (the stream width)
  width(static_cast<long long>(o.orbital_heads) * o.orbital_head_dim, "model.orbformer.orbital_heads * orbital_head_dim");
  require((o.heads * o.head_dim) % o.featurization_heads == 0, "model.orbformer.featurization_heads",
          "must divide the electron feature width heads*head_dim");
  require(o.nuclear_feature_dim % o.nuclear_heads == 0, "model.orbformer.nuclear_heads",
          "must divide nuclear_feature_dim");
  const auto& ps = c.model.psiformer;
  depth(ps.layers, "model.psiformer.layers", 1);
  width(ps.heads, "model.psiformer.heads");
  width(ps.head_dim, "model.psiformer.head_dim");
  width(static_cast<long long>(ps.heads) * ps.head_dim, "model.psiformer.heads * head_dim");  // (the stream width)
  require(ps.mlp_hidden_dims.size() <= 64, "model.psiformer.mlp_hidden_dims", "must have at most 64 layers");
  for (int w : ps.mlp_hidden_dims)
    require(w > 0 && w <= 65536, "model.psiformer.mlp_hidden_dims", "widths must be between 1 and 65536");
  require(ps.determinants > 0 && ps.determinants <= 1024, "model.psiformer.determinants", "must be between 1 and 1024");
  require_one_of(ps.jastrow, {"simple_ee", "none"}, "model.psiformer.jastrow");
  require_one_of(ps.envelope, {"isotropic"}, "model.psiformer.envelope");
}

FermiNetOptions FermiNetOptions::sized_for(int n_electrons) const {
  FermiNetOptions o = *this;
  const int n = std::max(1, n_electrons);
  if (!o.hidden_dims) {
    const int width = std::clamp(16 * n, 32, 256);
    o.hidden_dims = std::vector<std::array<int, 2>>(n < 10 ? 3 : 4, {width, std::clamp(width / 4, 8, 32)});
  }
  if (!o.determinants) o.determinants = std::clamp(2 * n, 4, 16);
  return o;
}

namespace {
/// Ansätze whose orbitals start random and learn much faster from a Hartree-Fock fit first.
bool learns_orbitals_from_scratch(const ModelConfig& m) {
  static const std::set<std::string> kFromScratch = {"ferminet", "psiformer", "orbformer"};
  return m.init_from.empty() && kFromScratch.count(m.type) > 0;
}

/// The keys that choose the molecules of a run: an override of one replaces the others.
const char* const kMoleculeKeys[] = {"molecule", "molecules", "dataset"};

/// Before an override of system.molecule, system.molecules or system.dataset is applied, the
/// other two are removed: the override chooses the run's molecules (e.g. `nnvmc eval CKPT
/// system.molecule=h2` on a checkpoint of several molecules).
void clear_other_molecule_keys(YAML::Node& root, const std::string& assignment) {
  if (!root.IsMap() || !root["system"] || !root["system"].IsMap()) return;
  std::vector<std::string> set_keys;  // the molecule keys the override sets (system.KEY=..., system={KEY: ...})
  for (const char* k : kMoleculeKeys)
    if (override_sets(assignment, std::string("system.") + k)) set_keys.emplace_back(k);
  if (set_keys.empty()) return;
  YAML::Node system = root["system"];
  const YAML::Node& given = system;  // const lookups add no keys
  for (const char* other : kMoleculeKeys)
    if (std::find(set_keys.begin(), set_keys.end(), other) == set_keys.end() && given[other]) system.remove(other);
}
}  // namespace

void config_yaml::apply_dependent_defaults(Config& c, const YAML::Node& root) {
  const YAML::Node optim = root.IsMap() ? root["optim"] : YAML::Node();
  const bool lr_given = optim && optim.IsMap() && optim["lr"];
  if (!lr_given && c.optim.type == "kfac") c.optim.lr = kKfacLr;
  else if (!lr_given && c.optim.type != "adam") c.optim.lr = kNaturalGradientLr;
  if (!(optim && optim.IsMap() && optim["lr_delay"]) && c.optim.type == "kfac") c.optim.lr_delay = kKfacLrDelay;
  if (!c.optim.determinant_balance)  // written out, so config.yaml holds the weight the run used
    c.optim.determinant_balance = c.optim.type == "adam" ? kDeterminantBalanceDefault : 0.0;
  const YAML::Node pretrain = root.IsMap() ? root["pretrain"] : YAML::Node();
  const bool steps_given = pretrain && pretrain.IsMap() && pretrain["steps"];
  if (!steps_given) c.pretrain.steps = learns_orbitals_from_scratch(c.model) ? kPretrainSteps : 0;
}

bool override_sets(const std::string& assignment, const std::string& key_path) {
  const auto alone = config_yaml::override_tree(assignment);
  if (!alone) return false;
  std::vector<std::string> parts;
  std::stringstream ss(key_path);
  for (std::string p; std::getline(ss, p, '.');) parts.push_back(p);
  return config_yaml::node_at(*alone, parts).IsDefined();
}

namespace config_yaml {

/// `message` of a setting's range check ("'KEY' must be ...") with where the setting came from:
/// the last override that sets KEY ("override 'KEY=VALUE': ..."), else its file line
/// ("FILE:LINE: ..."); unchanged when KEY was not given (a default, or not a key).
std::string located_setting_error(const std::string& message, const YAML::Node& root,
                                  const std::vector<std::string>& overrides, const std::string& where) {
  if (message.size() < 2 || message[0] != '\'') return message;
  const std::string key = message.substr(1, message.find('\'', 1) - 1);
  // an override that sets KEY or a mapping holding it ('sampler={walkers: -1}'), not one that
  // sets something inside KEY (system.charge=1 for a message about 'system')
  for (auto o = overrides.rbegin(); o != overrides.rend(); ++o) {
    std::string path = o->substr(0, o->find('='));
    path.erase(path.find_last_not_of(" \t") + 1);
    const bool holds = path == key || (key.size() > path.size() && key.compare(0, path.size(), path) == 0 &&
                                       key[path.size()] == '.');
    if (holds && nnvmc::override_sets(*o, key)) return "override '" + *o + "': " + message;
  }
  std::vector<std::string> parts;
  std::stringstream ss(key);
  for (std::string p; std::getline(ss, p, '.');) parts.push_back(p);
  const YAML::Node node = root.IsMap() ? node_at(root, parts) : YAML::Node();
  if (!node.IsDefined() || node.Mark().is_null()) return message;
  return location(node, where) + ": " + message;
}

}  // namespace config_yaml

namespace {
/// parse_config of a loaded document (`root`, null for an empty one).
Config parse_config_tree(YAML::Node root, const std::vector<std::string>& overrides, const std::string& where) {
  if (!root || root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  if (!root.IsMap())  // (a list or a scalar: its overrides would be blamed, or '' named)
    throw ConfigError(config_yaml::location(root, where) +
                      ": a run config must be a mapping of sections (system:, model:, sampler:, ...)");
  std::string molecule_override;  // the first override that chose the molecules
  for (const auto& o : overrides) {
    config_yaml::check_override<Config>(o);
    for (const char* k : kMoleculeKeys) {
      if (!override_sets(o, std::string("system.") + k)) continue;
      // (each cleared the others: the last one given won, silently; in a file both are refused)
      if (!molecule_override.empty() && molecule_override != k)
        throw ConfigError("overrides: 'system." + molecule_override + "' and 'system." + k +
                          "' both choose the molecules; give one of system.molecule, system.molecules, system.dataset");
      molecule_override = k;
    }
    clear_other_molecule_keys(root, o);
    config_yaml::apply_override(root, o);
  }
  Config c;
  config_yaml::read_struct(root, c, "", where);
  config_yaml::apply_dependent_defaults(c, root);
  try {
    validate(c);
  } catch (const ConfigError& e) {
    throw ConfigError(config_yaml::located_setting_error(e.what(), root, overrides, where));
  }
  return c;
}
}  // namespace

Config parse_config(const std::string& yaml_text, const std::vector<std::string>& overrides,
                    const std::string& where) {
  return parse_config_tree(load_yaml_document(yaml_text, where), overrides, where);
}

Config load_config(const std::string& path, const std::vector<std::string>& overrides) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
    throw ConfigError(path + ": cannot open config file (not a regular file)");
  std::ifstream in(path);
  if (!in) throw ConfigError(path + ": cannot open config file");
  // (YAML reads an xyz file's lines as documents: "a second YAML document (after '---')", a user audit)
  if (is_xyz_path(path))
    throw ConfigError(path + ": an xyz molecule file, not a run config: give it as system.molecule=" + path +
                      " with a run config (e.g. one of configs/runs/)");
  std::stringstream ss;
  ss << in.rdbuf();
  // A binary file (a checkpoint, an HDF5 result) is named as such, not as YAML with raw bytes
  if (const std::string text = ss.str(); text.find('\0') != std::string::npos)
    throw ConfigError(path + ": a binary file, not a run config (YAML text)" +
                      std::string(text.rfind("\x89HDF", 0) == 0
                                      ? ": an HDF5 file; evaluate a checkpoint with nnvmc eval, continue a run with "
                                        "nnvmc train --resume DIR"
                                      : ""));
  // An empty file and no overrides trained the default LiH for 1000 iterations, unasked.
  const YAML::Node document = load_yaml_document(ss.str(), path);
  if ((!document || document.IsNull()) && overrides.empty())
    throw ConfigError(path + ": the config file is empty (give its settings, e.g. system.molecule; see configs/runs/)");
  Config c = parse_config_tree(document, overrides, path);
  if (c.run.name.empty()) c.run.name = std::filesystem::path(path).stem().string();
  check_run_name(c.run.name);
  return c;
}

Config config_from_overrides(const std::vector<std::string>& overrides) {
  if (overrides.empty())
    throw ConfigError("no settings: give a run config, or key=value settings (e.g. system.molecule=h2)");
  Config c = parse_config("", overrides, "the command line");
  if (c.run.name.empty()) {
    // the molecule: the default's name, a file's stem, a name; none for inline atoms or a list
    std::string molecule = c.system.molecules || c.system.dataset ? "" : "lih";
    if (c.system.molecule) {
      molecule = c.system.molecule->yaml;
      if (molecule.find('/') != std::string::npos || is_xyz_path(molecule) || molecule.ends_with(".yaml") ||
          molecule.ends_with(".yml"))
        molecule = std::filesystem::path(molecule).stem().string();
    }
    if (molecule.find_first_of("/.{}[]:, \n\t\"'") != std::string::npos) molecule.clear();
    if (!molecule.empty() && c.system.charge && *c.system.charge != 0)
      molecule += "_charge" + std::string(*c.system.charge > 0 ? "+" : "") +
                  std::to_string(*c.system.charge);  // (h2 and its cation are two runs)
    c.run.name = (molecule.empty() ? std::string() : molecule + "_") + c.model.type;
  }
  check_run_name(c.run.name);
  return c;
}

void check_run_name(const std::string& name) {
  require(name.find('/') == std::string::npos && name != "." && name != "..", "run.name",
          "must be a plain name, not a path ('" + name + "'; run.output chooses where the run is written)");
}

Config as_recorded(const Config& config, int n_electrons) {
  Config c = config;
  if (!c.system.molecule && !c.system.molecules && !c.system.dataset) c.system.molecule = InlineYaml{"lih"};
  c.model.ferminet = c.model.ferminet.sized_for(n_electrons);
  return c;
}

std::string to_yaml(const Config& config) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  config_yaml::Writer w(out);
  const_cast<Config&>(config).visit(w);
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace nnvmc
