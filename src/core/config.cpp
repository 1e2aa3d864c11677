#include "core/config.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/config_yaml.hpp"

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

std::string suggestion(const std::string& key, const std::vector<std::string>& candidates) {
  std::string best;
  int best_d = 1 << 30;
  for (const auto& c : candidates) {
    const int d = edit_distance(key, c);
    if (d < best_d) best_d = d, best = c;
  }
  if (!best.empty() && best_d <= std::max<int>(2, static_cast<int>(key.size()) / 3))
    return " (did you mean '" + best + "'?)";
  std::string all;
  for (const auto& c : candidates) all += (all.empty() ? "" : ", ") + c;
  return " (valid keys: " + all + ")";
}

std::string location(const YAML::Node& node, const std::string& where) {
  if (node.Mark().is_null() || node.Mark().line < 0) return where;
  return where + ":" + std::to_string(node.Mark().line + 1);
}

void Reader::check_unknown() const {
  for (const auto& kv : map_) {
    const auto key = kv.first.as<std::string>();
    if (std::find(known_.begin(), known_.end(), key) == known_.end()) {
      const std::string full = path_.empty() ? key : path_ + "." + key;
      throw ConfigError(location(kv.first, where_) + ": unknown key '" + full + "'" +
                        suggestion(key, known_));
    }
  }
}

void apply_override(YAML::Node& root, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw ConfigError("override '" + assignment + "' must look like key.path=value");
  const std::string path = assignment.substr(0, eq);
  YAML::Node value;
  try {
    value = YAML::Load(assignment.substr(eq + 1));
  } catch (const YAML::Exception& e) {
    throw ConfigError("override '" + assignment + "': malformed value: " + e.msg);
  }
  std::vector<std::string> parts;
  std::stringstream ss(path);
  for (std::string p; std::getline(ss, p, '.');) parts.push_back(p);
  // yaml-cpp nodes are handles: walk with fresh handles, never reassign a shared one.
  std::vector<YAML::Node> chain{root};
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    YAML::Node child = chain.back()[parts[i]];
    if (!child.IsDefined() || child.IsNull()) {
      chain.back()[parts[i]] = YAML::Node(YAML::NodeType::Map);
      child = chain.back()[parts[i]];
    }
    if (!child.IsMap())
      throw ConfigError("override '" + assignment + "': '" + parts[i] + "' is not a mapping");
    chain.push_back(child);
  }
  chain.back()[parts.back()] = value;
}

}  // namespace config_yaml

std::uint64_t parse_bytes(const std::string& text, const std::string& key) {
  std::size_t pos = 0;
  double v = 0;
  try {
    v = std::stod(text, &pos);
  } catch (const std::exception&) {
    throw ConfigError("'" + key + "' must be a byte count like 2GiB or 500MB, got '" + text + "'");
  }
  std::string unit = text.substr(pos);
  unit.erase(std::remove_if(unit.begin(), unit.end(), ::isspace), unit.end());
  std::transform(unit.begin(), unit.end(), unit.begin(), ::tolower);
  double mult = 0;
  if (unit.empty() || unit == "b") mult = 1;
  else if (unit == "kb" || unit == "k") mult = 1e3;
  else if (unit == "mb" || unit == "m") mult = 1e6;
  else if (unit == "gb" || unit == "g") mult = 1e9;
  else if (unit == "kib") mult = 1024.0;
  else if (unit == "mib") mult = 1024.0 * 1024;
  else if (unit == "gib") mult = 1024.0 * 1024 * 1024;
  else if (unit == "tib") mult = 1024.0 * 1024 * 1024 * 1024;
  if (mult == 0 || v <= 0)
    throw ConfigError("'" + key + "' must be a positive byte count like 2GiB or 500MB, got '" +
                      text + "'");
  return static_cast<std::uint64_t>(v * mult);
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

void validate(const Config& c) {
  require(c.sampler.walkers > 0, "sampler.walkers", "must be > 0");
  require(c.sampler.steps_per_iteration > 0, "sampler.steps_per_iteration", "must be > 0");
  require(c.sampler.burn_in >= 0, "sampler.burn_in", "must be >= 0");
  require(c.sampler.step_size > 0, "sampler.step_size", "must be > 0");
  require(c.sampler.target_acceptance > 0 && c.sampler.target_acceptance < 1,
          "sampler.target_acceptance", "must be in (0, 1)");
  require_one_of(c.hamiltonian.laplacian, {"jvp", "reverse", "hutchinson", "forward"}, "hamiltonian.laplacian");
  require(c.hamiltonian.hutchinson.probes > 0, "hamiltonian.hutchinson.probes", "must be > 0");
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
  require(c.optim.lr_delay > 0, "optim.lr_delay", "must be > 0");
  require(c.optim.iterations >= 0, "optim.iterations", "must be >= 0");
  require(c.optim.clip_width > 0, "optim.clip_width", "must be > 0");
  require(c.optim.log_every > 0, "optim.log_every", "must be > 0");
  require(c.pretrain.steps >= 0, "pretrain.steps", "must be >= 0");
  require(c.eval.steps >= 0, "eval.steps", "must be >= 0");
  require(c.eval.burn_in >= 0, "eval.burn_in", "must be >= 0");
  require_one_of(c.run.dtype, {"float64", "float32"}, "run.dtype");
  require(c.run.device == "cpu" || c.run.device.rfind("cuda", 0) == 0, "run.device",
          "must be cpu, cuda or cuda:N");
  require(c.run.checkpoint_every >= 0, "run.checkpoint_every", "must be >= 0");
  require(c.run.threads >= 0, "run.threads", "must be >= 0");
  if (c.run.memory_budget != "auto") parse_bytes(c.run.memory_budget, "run.memory_budget");
  const auto& f = c.model.ferminet;
  require(!f.hidden_dims.empty(), "model.ferminet.hidden_dims", "must have at least one layer");
  for (const auto& l : f.hidden_dims)
    require(l[0] > 0 && l[1] > 0, "model.ferminet.hidden_dims", "widths must be > 0");
  require(f.determinants > 0, "model.ferminet.determinants", "must be > 0");
  require_one_of(f.envelope, {"isotropic"}, "model.ferminet.envelope");
}

Config parse_config(const std::string& yaml_text, const std::vector<std::string>& overrides,
                    const std::string& where) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw ConfigError(where + ":" + std::to_string(e.mark.line + 1) + ": malformed YAML: " + e.msg);
  }
  if (!root || root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  for (const auto& o : overrides) config_yaml::apply_override(root, o);
  Config c;
  config_yaml::read_struct(root, c, "", where);
  validate(c);
  return c;
}

Config load_config(const std::string& path, const std::vector<std::string>& overrides) {
  std::ifstream in(path);
  if (!in) throw ConfigError(path + ": cannot open config file");
  std::stringstream ss;
  ss << in.rdbuf();
  Config c = parse_config(ss.str(), overrides, path);
  if (c.run.name.empty()) c.run.name = std::filesystem::path(path).stem().string();
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
