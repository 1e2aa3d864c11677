#include "compare/spec.hpp"

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <optional>
#include <sstream>

#include "core/config_yaml.hpp"
#include "core/errors.hpp"
#include "core/log.hpp"
#include "scf/basis.hpp"
#include "core/molecule_list.hpp"
#include "core/system.hpp"
#include "core/yaml_document.hpp"
#include "models/model_traits.hpp"

namespace nnvmc::compare {
namespace fs = std::filesystem;

namespace {

/// A cell's molecule as an inline entry, without the molecule file's reference energy: the
/// comparison scores every cell against its own references (the file's, or CCSD(T) under
/// `references: ccsd_t`, which a cell's own e_ref would contradict), and a cell written before
/// inline entries carried e_ref must stay the same cell (a review: such cells were refused as
/// changed).
std::string cell_molecule_entry(System s, const std::string& name) {
  s.e_ref.reset();
  s.e_ref_source.clear();
  return inline_molecule_entry(s, name);
}

/// Top-level keys of a comparison file (read with the run-config reader: unknown keys and
/// wrong types are ConfigErrors naming the key). The polymorphic entries are read from the
/// YAML nodes directly.
struct CompareFile {
  InlineYaml ansatze{""}, molecules{""}, laplacian{""}, optim{""}, dtype{""}, base{""};
  std::optional<int> iterations, walkers, eval_steps, threads, seed;
  double minutes = 0;
  std::string references = "auto";
  std::string reference_basis = "cc-pvdz";
  std::string output = "runs/<name>";
  std::vector<std::string> overrides;
  template <class V> void visit(V& v) {
    v("ansatze", ansatze, "model blocks (as under model:) or run-config paths");
    v("molecules", molecules, "molecule names, files or inline molecules");
    v("laplacian", laplacian, "optional axis: hamiltonian.laplacian values");
    v("optim", optim, "optional axis: optimizer types or optim blocks");
    v("dtype", dtype, "optional axis: run.dtype values");
    v("base", base, "run config (path or mapping) under the model blocks");
    v("iterations", iterations, "training iterations per cell (0: each cell is evaluated untrained, or HF-pretrained only)");
    v("minutes", minutes, "training wall time per cell (0: no limit)");
    v("walkers", walkers, "walkers per cell");
    v("eval_steps", eval_steps, "evaluation steps per cell");
    v("threads", threads, "intra-op threads per cell (default: cores / jobs)");
    v("seed", seed, "random seed of every cell");
    v("references", references, "exact | ccsd_t | auto");
    v("reference_basis", reference_basis, "basis of CCSD(T) references");
    v("output", output, "output directory (<name> is the file's stem)");
    v("overrides", overrides, "key.path=value applied to every cell");
  }
};

/// An ansatz entry: the run config it starts from, its model block, extra overrides.
struct AnsatzEntry {
  std::string label;
  YAML::Node entry;  ///< the entry of ansatze: in the file (for its line)
  YAML::Node base;   ///< run config mapping (may be empty)
  YAML::Node model;  ///< model block (undefined: the base's)
  std::vector<std::string> overrides;
};

/// An entry of an optional axis.
struct AxisEntry {
  std::string label;
  YAML::Node value;
};

std::string at(const std::string& key, size_t i) { return key + "[" + std::to_string(i) + "]"; }

std::string resolve_path(const std::string& spec, const std::string& file_dir) {
  // a frame of a multi-frame XYZ file (FILE.xyz@K): the file is looked up, the frame kept
  const auto [p, frame] = split_xyz_frame(spec);
  const std::string suffix = spec.substr(p.size());
  if (fs::path(p).is_absolute()) return spec;
  const fs::path here = fs::absolute(p).lexically_normal(), beside = fs::absolute(fs::path(file_dir) / p).lexically_normal();
  std::error_code ec;
  const bool in_cwd = fs::exists(here, ec), in_dir = fs::exists(beside, ec);
  if (in_cwd && in_dir && !fs::equivalent(here, beside, ec))  // (one used to shadow the other silently)
    throw ConfigError("'" + p + "' names two files, " + here.string() + " (in the working directory) and " +
                      beside.string() + " (beside the comparison file); give the one meant by its absolute path");
  // Absolute, so that a cell's config reads the same file from any directory.
  if (in_cwd) return here.string() + suffix;
  return in_dir ? beside.string() + suffix : spec;
}

YAML::Node load_yaml_file(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  if (!in) throw ConfigError("'" + key + "': cannot open run config '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    YAML::Node n = load_yaml_document(ss.str(), path);
    return n && !n.IsNull() ? n : YAML::Node(YAML::NodeType::Map);
  } catch (const ConfigError& e) {
    throw ConfigError("'" + key + "': " + e.what());
  }
}

/// Sets root[a][b]... = value, creating mappings on the way (yaml-cpp nodes are handles).
void set_path(YAML::Node& root, const std::vector<std::string>& path, const YAML::Node& value) {
  std::vector<YAML::Node> chain{root};
  for (size_t i = 0; i + 1 < path.size(); ++i) {
    YAML::Node child = chain.back()[path[i]];
    if (!child.IsDefined() || !child.IsMap()) {
      chain.back()[path[i]] = YAML::Node(YAML::NodeType::Map);
      child = chain.back()[path[i]];
    }
    chain.push_back(child);
  }
  chain.back()[path.back()] = value;
}

/// A run config file used as an ansatz or base: checked on its own first (its own file:line
/// in messages), then returned as YAML.
YAML::Node run_config_node(const std::string& spec_path, const std::string& file_dir, const std::string& key) {
  const std::string path = resolve_path(spec_path, file_dir);
  try {
    load_config(path);
  } catch (const ConfigError& e) {
    throw ConfigError("'" + key + "': " + e.what());
  }
  return load_yaml_file(path, key);
}

std::vector<YAML::Node> list_of(const YAML::Node& root, const std::string& key, const std::string& where,
                                bool required) {
  const YAML::Node n = root[key];
  if (!n || n.IsNull()) {
    if (required) throw ConfigError(where + ": missing '" + key + "'");
    return {};
  }
  std::vector<YAML::Node> out;
  if (n.IsSequence()) {
    for (const auto& e : n) out.push_back(e);
  } else {
    out.push_back(n);
  }
  if (required && out.empty())
    throw ConfigError(config_yaml::location(n, where) + ": '" + key + "' must not be empty");
  return out;
}

/// `message` (read from the file `where`, maybe "WHERE:LINE: 'KEY' ...") about a key under
/// `prefix` that an override set: named by that override, not by the line the override's node
/// claims. Unchanged otherwise.
std::string blamed_on_override(const std::string& message, const std::string& prefix,
                               const std::vector<std::string>& overrides, const std::string& where) {
  std::string text = message;
  if (text.rfind(where + ":", 0) == 0) {
    const auto colon = text.find(": ", where.size());
    if (colon != std::string::npos) text = text.substr(colon + 2);
  }
  const auto open = text.find('\'');
  const auto close = open == std::string::npos ? open : text.find('\'', open + 1);
  if (close == std::string::npos) return message;
  const std::string key = text.substr(open + 1, close - open - 1);
  for (auto o = overrides.rbegin(); o != overrides.rend(); ++o)
    if (override_sets(*o, prefix + key)) return "override '" + *o + "': " + text;
  return message;
}

/// Makes labels unique ("x", "x-2", ...), also against labels that already end so ("x", "x",
/// "x-2" gives "x", "x-3", "x-2"), and says so: a renamed entry is named in a warning, which for
/// an entry the same as an earlier one (`contents`, one text per label) says that its cells
/// repeat the other's runs (a user audit found "adam-2" and "h2-2" in tables without a word).
void uniquify(std::vector<std::string*> labels, const std::string& key, const std::vector<std::string>& contents) {
  std::set<std::string> given, used;
  std::map<std::string, std::size_t> first;  // label -> index of its first entry
  for (const auto* l : labels) given.insert(*l);
  for (std::size_t i = 0; i < labels.size(); ++i) {
    auto* l = labels[i];
    if (used.insert(*l).second) {
      first.emplace(*l, i);
      continue;
    }
    std::string candidate;
    for (int k = 2;; ++k) {
      candidate = *l;
      candidate.append("-").append(std::to_string(k));  // not "-" + to_string: GCC 12 -O3 false -Wstringop-overflow
      if (given.count(candidate) == 0 && used.count(candidate) == 0) break;
    }
    const std::size_t j = first.count(*l) ? first.at(*l) : i;
    const bool same = j < i && i < contents.size() && contents[i] == contents[j];
    log::warn(strfmt("compare: '%s' and '%s' are both labelled '%s': the later one's cells and rows are called '%s'%s",
                     at(key, j).c_str(), at(key, i).c_str(), l->c_str(), candidate.c_str(),
                     same ? "; the two entries are the same, so its cells repeat the other's runs with the same seed "
                            "(not independent replicas)"
                          : "; give the entries label: keys to name them"));
    *l = candidate;
    used.insert(candidate);
  }
}

std::vector<AnsatzEntry> parse_ansatze(const YAML::Node& root, const YAML::Node& base, const std::string& where,
                                       const std::string& file_dir) {
  std::vector<AnsatzEntry> out;
  const auto entries = list_of(root, "ansatze", where, true);
  for (size_t i = 0; i < entries.size(); ++i) {
    const auto& e = entries[i];
    const std::string key = at("ansatze", i);
    AnsatzEntry a;
    a.entry = e;
    // A run-config entry is a whole run config: `base:` lies under model blocks only. Said, since
    // a user comparing it with model blocks would expect the same base (a file of configs/models/
    // holds only a model, and trained with every other default).
    const auto base_does_not_apply = [&](const std::string& path) {
      if (base.IsMap() && base.size() > 0)
        log::warn("'" + key + "' (" + path + ") is a run config: 'base:' does not apply to it (it lies under model "
                  "blocks); give its settings in the comparison's overrides:, in the entry's own overrides:, or "
                  "write it as a model block");
    };
    if (e.IsScalar()) {
      a.base = run_config_node(e.Scalar(), file_dir, key);
      a.label = fs::path(e.Scalar()).stem().string();
      base_does_not_apply(e.Scalar());
    } else if (e.IsMap()) {
      YAML::Node model(YAML::NodeType::Map);
      std::string config_path;
      for (const auto& kv : e) {
        const auto k = kv.first.as<std::string>();
        if (k == "label") a.label = kv.second.as<std::string>();
        else if (k == "config") config_path = kv.second.as<std::string>();
        else if (k == "overrides") {
          try {
            a.overrides = kv.second.as<std::vector<std::string>>();
          } catch (const YAML::Exception&) {
            throw ConfigError(config_yaml::location(kv.second, where) + ": '" + key +
                              ".overrides' must be a list of key.path=value");
          }
        } else model[k] = kv.second;
      }
      if (!config_path.empty()) {
        if (model.size() > 0)
          throw ConfigError(config_yaml::location(e, where) + ": '" + key +
                            "' gives both config: and model keys; give one of them");
        a.base = run_config_node(config_path, file_dir, key + ".config");
        base_does_not_apply(config_path);
        if (a.label.empty()) a.label = fs::path(config_path).stem().string();
      } else {
        if (!model["type"])
          throw ConfigError(config_yaml::location(e, where) + ": '" + key +
                            ".type' is missing (a model block names its ansatz, e.g. type: ferminet)");
        a.base = YAML::Clone(base);
        a.model = model;
        if (a.label.empty()) a.label = model["type"].as<std::string>();
      }
    } else {
      throw ConfigError(config_yaml::location(e, where) + ": '" + key +
                        "' must be a model block or a run-config path");
    }
    a.label = sanitize_label(a.label);
    out.push_back(std::move(a));
  }
  std::vector<std::string*> labels;
  std::vector<std::string> contents;
  for (auto& a : out) {
    labels.push_back(&a.label);
    contents.push_back(YAML::Dump(a.entry));
  }
  uniquify(labels, "ansatze", contents);
  return out;
}

/// The molecules of a comparison, each with the `system:` block its cells train: names, files
/// and inline molecules as system.molecule, {molecule: NAME-OR-PATH, geometry, ...} entries as a
/// system.molecules list of one (the forms and the parser are those of system.molecules).
std::vector<std::pair<MoleculeEntry, YAML::Node>> parse_molecules(const YAML::Node& root, const std::string& where,
                                                                  const std::string& file_dir) {
  std::vector<std::pair<MoleculeEntry, YAML::Node>> out;
  const auto entries = list_of(root, "molecules", where, true);
  // A bare list of atoms ([[H, 0, 0, 0], ...]) is one inline molecule, not a list of molecules.
  // (A fresh vector: assigning a YAML::Node over an element would write into the node it refers to.)
  const bool bare = root["molecules"].IsSequence() && !entries.empty() && entries[0].IsSequence() &&
                    entries[0].size() == 4 && entries[0][0].IsScalar() && !entries[0][0].IsSequence();
  const std::vector<YAML::Node> items = bare ? std::vector<YAML::Node>{root["molecules"]} : entries;
  for (size_t i = 0; i < items.size(); ++i) {
    const auto& e = items[i];
    const std::string key = at("molecules", i);
    MoleculeEntry m;
    YAML::Node system(YAML::NodeType::Map);
    // Names stay names; paths are read relative to the comparison file.
    const auto resolved = [&](const std::string& s) {
      const bool path = s.find('/') != std::string::npos || fs::path(s).has_extension();
      return path ? resolve_path(s, file_dir) : s;
    };
    bool unnamed_inline = false;
    try {
      if (e.IsScalar()) {
        const std::string p = resolved(e.Scalar());
        m.system = parse_molecule_entry(YAML::Node(p), key, "", i);
      } else if (e.IsMap() && e["molecule"]) {
        YAML::Node entry = YAML::Clone(e);
        if (entry["molecule"].IsScalar()) entry["molecule"] = resolved(entry["molecule"].Scalar());
        m.system = parse_molecule_entry(entry, key, "", i);
      } else {
        m.system = parse_molecule_entry(e, config_yaml::location(e, where) + ": " + key, "", i);
        unnamed_inline = !(e.IsMap() && e["name"]);
      }
      m.label = m.system.name;
      m.system.validate();
      // The cell's config holds the geometry itself: with a file's path, a done cell was reused
      // after the file changed and scored against the new geometry's reference (a user audit),
      // and a comparison copied elsewhere with its files was refused as changed.
      // (an inline molecule without a name is "inline" in its cell, as a cell's system.molecule
      // named it before: "inline1" made those cells differ; the label stays inline1, inline2, ...)
      system["molecules"].push_back(YAML::Load(cell_molecule_entry(m.system, unnamed_inline ? "inline" : m.system.name)));
    } catch (const ConfigError&) {
      throw;
    } catch (const InputError& err) {
      throw ConfigError("'" + key + "': " + err.what());
    }
    m.label = sanitize_label(m.label);
    out.emplace_back(std::move(m), system);
  }
  // An unnamed entry giving a molecule another geometry, beside an entry of that molecule as its
  // file has it, is NAME_geom: it took "h2" (H2 at 1.6 bohr) and the file's H2 became "h2-2",
  // scored against the exact reference (a user audit). Alone it keeps the name (its cells keep
  // their directories from earlier versions); the cell's molecule keeps its name either way.
  for (auto& [m, node] : out) {
    if (!m.system.entry_geometry || m.system.name_explicit) continue;
    for (const auto& [other, other_node] : out)
      if (!other.system.entry_geometry && other.label == m.label) {
        m.label += "_geom";
        break;
      }
  }
  std::vector<std::string*> labels;
  std::vector<std::string> contents;
  for (auto& m : out) {
    labels.push_back(&m.first.label);
    contents.push_back(YAML::Dump(m.second));
  }
  uniquify(labels, "molecules", contents);
  return out;
}

/// Whether the ansatz a cell's tree builds has parameters to train (an unknown model.type counts
/// as trainable here: reading the cell's config names it).
bool builds_trainable_ansatz(const YAML::Node& node) {
  const YAML::Node& tree = node;  // const lookups add no keys
  std::string type = ModelConfig{}.type;
  if (tree["model"] && tree["model"].IsMap() && tree["model"]["type"] && tree["model"]["type"].IsScalar())
    type = tree["model"]["type"].Scalar();
  try {
    return ansatz_is_trainable(type);
  } catch (const ConfigError&) {
    return true;
  }
}

/// An optional axis: scalars (labels = values) or, for optim, mappings merged into optim.
std::vector<AxisEntry> parse_axis(const YAML::Node& root, const std::string& key, const std::string& where,
                                  bool mappings_allowed) {
  std::vector<AxisEntry> out;
  const auto entries = list_of(root, key, where, false);
  for (size_t i = 0; i < entries.size(); ++i) {
    const auto& e = entries[i];
    AxisEntry a;
    if (e.IsScalar()) {
      a.label = e.Scalar();
      a.value = e;
    } else if (mappings_allowed && e.IsMap()) {
      YAML::Node v(YAML::NodeType::Map);
      for (const auto& kv : e) {
        const auto k = kv.first.as<std::string>();
        if (k == "label") a.label = kv.second.as<std::string>();
        else v[k] = kv.second;
      }
      if (a.label.empty()) a.label = v["type"] ? v["type"].as<std::string>() : key + std::to_string(i + 1);
      a.value = v;
    } else {
      throw ConfigError(config_yaml::location(e, where) + ": '" + at(key, i) + "' must be a " +
                        (mappings_allowed ? "name or an optim block" : "name"));
    }
    a.label = sanitize_label(a.label);
    out.push_back(std::move(a));
  }
  std::vector<std::string*> labels;
  std::vector<std::string> contents;
  for (auto& a : out) {
    labels.push_back(&a.label);
    contents.push_back(YAML::Dump(a.value));
  }
  uniquify(labels, key, contents);
  return out;
}

ReferenceMode parse_references(const std::string& s) {
  if (s == "exact") return ReferenceMode::exact;
  if (s == "ccsd_t") return ReferenceMode::ccsd_t;
  if (s == "auto") return ReferenceMode::automatic;
  throw ConfigError("'references' must be one of exact, ccsd_t, auto, got '" + s + "'");
}

/// The molecule of a cell is its `molecules:` entry, and its reference is that molecule's: a
/// system.* key elsewhere (an override, the base or an ansatz's run config) would train another
/// molecule than the one the table names and scores.
const char* const kMoleculeEntryAdvice =
    "a comparison's molecules, with their charge and spin, are its 'molecules:' entries (e.g. "
    "{name: h2_cation, charge: 1, spin: 1, atoms: [[H, 0, 0, 0], [H, 0, 0, 1.4]]})";

void refuse_system_overrides(const std::vector<std::string>& overrides, const std::string& key) {
  for (const auto& o : overrides)
    if (override_sets(o, "system"))
      throw ConfigError("'" + key + "': '" + o + "' sets a system key: " + kMoleculeEntryAdvice);
}

void refuse_system_keys(const YAML::Node& run_config, const std::string& key) {
  if (!run_config.IsMap() || !run_config["system"]) return;
  const YAML::Node system = run_config["system"];
  if (!system.IsMap()) return;
  for (const auto& kv : system) {
    const std::string k = kv.first.Scalar();
    if (k != "molecule" && k != "molecules" && k != "dataset")  // (replaced by the cell's molecule)
      throw ConfigError("'" + key + "': system." + k + " does not apply to a comparison's cells: " + kMoleculeEntryAdvice);
  }
}

/// Merges the mapping `value` into `node` at `key`, key by key, as a `key={...}` override does
/// (a model block over the base's model keeps the base's other keys).
void merge_into(YAML::Node& node, const std::string& key, const YAML::Node& value) {
  YAML::Emitter e;
  e << YAML::Flow << value;
  config_yaml::apply_override(node, key + "=" + e.c_str());
}

void apply_overrides(YAML::Node& root, const std::vector<std::string>& overrides, const std::string& key) {
  refuse_system_overrides(overrides, key);
  for (const auto& o : overrides) {
    try {
      config_yaml::apply_override(root, o);
    } catch (const ConfigError& e) {
      throw ConfigError("'" + key + "': " + e.what());
    }
  }
}

}  // namespace

std::string sanitize_label(const std::string& label) {
  std::string out = label;
  for (auto& c : out)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '+' || c == '.' || c == '_')) c = '_';
  if (out.empty()) out = "_";
  if (out != label)  // (said: a user audit found "hf, baseline | x" silently as hf__baseline___x)
    log::warn("label '" + label + "' is '" + out + "' in cell names, directories and tables (letters, digits and "
              "- + . _ only)");
  return out;
}

Config identity_settings(const Config& config) {
  Config c = config;
  // the molecules as resolved (a cell.yaml written before cells held their geometry names a
  // file: the same geometry is the same cell)
  try {
    const std::vector<System> systems = resolve_molecules(config.system);
    std::string list;
    for (const auto& m : systems) list += (list.empty() ? "[" : ", ") + cell_molecule_entry(m, m.name);
    c.system = SystemConfig{};
    c.system.molecules = InlineYaml{list + "]"};
  } catch (const InputError&) {  // (a file no longer there: compared as written)
  }
  c.run.threads = 0;
  c.optim.minutes = 0;  // a comparison given more (or fewer) minutes continues its cells
  // ... and so does one given more iterations (needs_more_training; fewer than a cell trained are
  // refused, check_cells); 0 (an evaluation-only cell) stays a setting of its own
  if (c.optim.iterations > 0) c.optim.iterations = 1;
  // An ansatz without parameters ('hf') is not trained: its optimizer and pretraining settings
  // change nothing (a user audit: a done baseline cell was refused after an optim override went)
  if (!ansatz_is_trainable(c.model.type)) c.optim = OptimOptions{}, c.pretrain = PretrainOptions{};
  c.run.output.clear();  // the comparison places its cells: a copied comparison continues in the copy
  return c;
}

std::string cell_identity(const Config& config) { return to_yaml(identity_settings(config)); }

namespace {
/// `optim.lr=0.1` after a comparison file reads as a run setting, but `optim` is the file's list
/// of optimizers: a key inside it made a one-entry axis ("optim1") that renamed every cell.
/// @throws ConfigError naming the override, for a dotted key inside a list key of the file
void refuse_key_inside_a_list(const std::string& assignment) {
  const std::string key = assignment.substr(0, assignment.find('='));
  const auto dot = key.find('.');
  if (dot == std::string::npos) return;
  const std::string top = key.substr(0, dot);
  for (const char* list : {"ansatze", "molecules", "laplacian", "optim", "dtype"})
    if (top == list)
      throw ConfigError("override '" + assignment + "': '" + top + "' is a list of the comparison (" +
                        (top == "ansatze" || top == "molecules" ? "its " + top : "an axis") +
                        "), not a run setting: a setting of every cell goes in the file's overrides: [" + key +
                        "=...]; the list is replaced as a whole (" + top + "=[...])");
}
}  // namespace

CompareSpec parse_compare_spec(const std::string& yaml_text, const std::vector<std::string>& overrides,
                               const std::string& where, const std::string& file_dir) {
  YAML::Node root = load_yaml_document(yaml_text, where);
  if (!root || root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  if (!root.IsMap())  // (it said "'' must be a mapping")
    throw ConfigError(where + ": a comparison file is a mapping of keys (ansatze:, molecules:, ...), not a " +
                      (root.IsSequence() ? "list" : "single value"));
  for (const auto& o : overrides) {
    refuse_key_inside_a_list(o);
    config_yaml::check_override<CompareFile>(o);
    config_yaml::apply_override(root, o);
  }
  // an override emptying a list is named, not line 1 of the file (where its node claims to be)
  for (const char* list : {"ansatze", "molecules"})
    for (auto o = overrides.rbegin(); o != overrides.rend(); ++o)
      if (override_sets(*o, list)) {
        if (root[list].IsSequence() && root[list].size() == 0)
          throw ConfigError("override '" + *o + "': '" + list + "' must not be empty");
        break;
      }
  CompareFile f;
  config_yaml::read_struct(root, f, "", where);

  CompareSpec spec;
  spec.source = where;
  spec.name = fs::path(where).stem().string();
  spec.reference_basis = f.reference_basis;
  // (each names the line or override that gave the value)
  const auto refuse = [&](const std::string& message) {
    throw ConfigError(config_yaml::located_setting_error(message, root, overrides, where));
  };
  try {
    spec.references = parse_references(f.references);
  } catch (const ConfigError& e) {
    refuse(e.what());  // (it named neither the file nor the line, a user audit)
  }
  if (f.minutes < 0) refuse("'minutes' must be >= 0");
  if (f.iterations && *f.iterations < 0) refuse("'iterations' must be >= 0 (0: each cell is evaluated untrained)");
  if (f.iterations && *f.iterations == 0 && f.minutes > 0)
    refuse("'minutes' must be 0 with 'iterations: 0' (no cell trains)");
  if (f.walkers && *f.walkers <= 0) refuse("'walkers' must be > 0");
  if (f.eval_steps && *f.eval_steps <= 0)  // (0 gave "done" cells without an energy)
    refuse("'eval_steps' must be > 0: each cell's energy comes from its evaluation");
  if (f.threads && *f.threads <= 0) refuse("'threads' must be > 0");
  if (f.seed && *f.seed < 0) refuse("'seed' must be >= 0");
  spec.minutes = f.minutes;
  spec.iterations = f.iterations;
  spec.threads = f.threads.value_or(0);
  spec.output = f.output;
  if (const auto pos = spec.output.find("<name>"); pos != std::string::npos) spec.output.replace(pos, 6, spec.name);
  if (spec.output.empty()) throw ConfigError(where + ": 'output' must name a directory");
  {
    std::error_code ec;
    if (fs::exists(spec.output, ec) && !fs::is_directory(spec.output, ec))
      throw ConfigError(where + ": 'output': '" + spec.output + "' exists and is not a directory");
  }

  YAML::Node base(YAML::NodeType::Map);
  if (root["base"] && !root["base"].IsNull() && !root["base"].IsScalar() && !root["base"].IsMap())
    throw ConfigError(config_yaml::location(root["base"], where) +
                      ": 'base' must be a run config: a path or a mapping of its keys");
  if (root["base"] && !root["base"].IsNull())
    base = root["base"].IsScalar() ? run_config_node(root["base"].Scalar(), file_dir, "base") : root["base"];
  // (named here, not as the first model-block ansatz, whose cells it would reach first)
  refuse_system_keys(base, root["base"].IsScalar() ? "base (" + root["base"].Scalar() + ")" : "base");
  const auto ansatze = parse_ansatze(root, base, where, file_dir);
  // A base's model.type never reaches a model block, which names its own (a base of
  // configs/runs/lih_psiformer.yaml under a ferminet block trained FermiNet without a word).
  if (base.IsMap() && base["model"] && base["model"].IsMap() && base["model"]["type"] &&
      base["model"]["type"].IsScalar()) {
    const std::string base_type = base["model"]["type"].Scalar();
    std::string others;
    for (const auto& a : ansatze)
      if (a.model.IsDefined() && a.model["type"] && a.model["type"].as<std::string>() != base_type)
        others += (others.empty() ? "" : ", ") + a.label + ": " + a.model["type"].as<std::string>();
    if (!others.empty())
      log::warn("'base': its model.type " + base_type + " is replaced by the type each model block names (" + others +
                "); the base's model." + base_type + " settings reach only " + base_type + " blocks");
  }
  // The file's own run-setting blocks are read on their own first, while their nodes still know
  // their lines: a cell's config is built from copies, which do not, and its errors named line 1.
  if (root["base"] && root["base"].IsMap()) {
    try {
      Config probe;
      config_yaml::read_struct(root["base"], probe, "", where);
    } catch (const ConfigError& e) {
      throw ConfigError(blamed_on_override(e.what(), "base.", overrides, where));
    }
  }
  for (size_t i = 0; i < ansatze.size(); ++i)
    if (ansatze[i].model.IsDefined() && ansatze[i].model.IsMap()) {
      try {
        ModelConfig probe;
        config_yaml::read_struct(ansatze[i].model, probe, "model", where);
      } catch (const ConfigError& e) {  // (a key of the entry itself has no line of its own: the entry's)
        std::string m = e.what();
        if (const auto k = m.find("unknown key 'model."); k != std::string::npos)  // (the entry's keys are the model's)
          m.replace(k, 19, "unknown key '");
        throw ConfigError(m.rfind(where + ": ", 0) == 0
                              ? config_yaml::location(ansatze[i].entry, where) + ": '" + at("ansatze", i) + "': " +
                                    m.substr(where.size() + 2)
                              : m);
      }
    }
  const auto molecules = parse_molecules(root, where, file_dir);
  const auto laplacians = parse_axis(root, "laplacian", where, false);
  const auto optims = parse_axis(root, "optim", where, true);
  const auto dtypes = parse_axis(root, "dtype", where, false);
  // A run setting that an axis varies cannot also be overridden: the override won in every cell,
  // whose id and optim column still named the axis entry (a user audit: four "adam"/"sr" cells
  // all ran minsr).
  const auto refuse_axis_override = [&](const std::vector<std::string>& given, const std::string& whose) {
    for (const auto& [axis, key] : std::vector<std::pair<std::string, std::string>>{
             {"laplacian", "hamiltonian.laplacian"}, {"optim", "optim.type"}, {"dtype", "run.dtype"}}) {
      const bool varied = axis == "laplacian" ? !laplacians.empty() : axis == "optim" ? !optims.empty() : !dtypes.empty();
      for (const auto& o : given)
        if (varied && override_sets(o, key))
          throw ConfigError(where + ": override '" + o + "' (" + whose + ") sets " + key + ", which the comparison's '" +
                            axis + "' axis varies; give it as an entry of that axis, or leave the axis out");
    }
  };
  refuse_axis_override(f.overrides, "overrides:");
  for (const auto& a : ansatze) refuse_axis_override(a.overrides, "the overrides of ansatz " + a.label);
  // An override of what the common budget sets won in every cell without a word (a user audit:
  // overrides: [optim.iterations=50] over iterations: 30), and run.output/run.name, which the
  // comparison sets (cells/<cell id>), were ignored. An ansatz's own override of the budget is
  // its choice, and said: its cells then differ from the others'.
  const std::pair<const char*, const char*> budget[] = {{"iterations", "optim.iterations"}, {"minutes", "optim.minutes"},
                                                        {"walkers", "sampler.walkers"},   {"eval_steps", "eval.steps"},
                                                        {"threads", "run.threads"},       {"seed", "run.seed"}};
  const auto budget_given = [&](const std::string& field) {
    return field == "iterations" ? f.iterations.has_value() : field == "minutes" ? f.minutes > 0
           : field == "walkers"  ? f.walkers.has_value()    : field == "eval_steps" ? f.eval_steps.has_value()
           : field == "threads"  ? f.threads.has_value()    : f.seed.has_value();
  };
  const auto check_budget_overrides = [&](const std::vector<std::string>& given, const std::string& whose,
                                          bool every_cell) {
    for (const auto& o : given) {
      for (const char* key : {"run.output", "run.name"})
        if (override_sets(o, key))
          throw ConfigError(where + ": override '" + o + "' (" + whose + ") sets " + key + ", which the comparison "
                            "sets for each cell (its output's cells/<cell id>); give the comparison's 'output:'");
      for (const auto& [field, key] : budget) {
        // (with minutes: alone the cells' iterations are unbounded: an optim.iterations override capped them)
        const bool given_by_minutes = std::string(field) == "iterations" && !budget_given(field) && f.minutes > 0;
        if (!(budget_given(field) || given_by_minutes) || !override_sets(o, key)) continue;
        if (given_by_minutes) {
          if (every_cell)
            throw ConfigError(where + ": override '" + o + "' (" + whose + ") sets optim.iterations, which the "
                              "comparison's 'minutes:' leaves unbounded; give 'iterations:' beside 'minutes:' for both "
                              "limits");
          log::warn(where + ": override '" + o + "' (" + whose + ") caps the iterations of that ansatz's cells, "
                    "whose budget then differs from the others' (minutes:)");
          continue;
        }
        if (every_cell)
          throw ConfigError(where + ": override '" + o + "' (" + whose + ") sets " + key + ", which the comparison's '" +
                            field + ":' sets for every cell; give it once");
        log::warn(where + ": override '" + o + "' (" + whose + ") replaces the comparison's '" + field +
                  ":' for that ansatz's cells, whose budget then differs from the others'");
      }
    }
  };
  // (an optim axis entry's own iterations are that entry, e.g. long and short runs: not checked)
  check_budget_overrides(f.overrides, "overrides:", true);
  for (const auto& a : ansatze) check_budget_overrides(a.overrides, "the overrides of ansatz " + a.label, false);
  for (const auto& a : ansatze) spec.ansatze.push_back(a.label);
  bool basis_used = false;  // (by a reference nnvmc computes)
  for (const auto& m : molecules) {
    const System& system = m.first.system;
    if (spec.references == ReferenceMode::exact && !system.e_ref)
      throw ConfigError("'references': exact, but molecule '" + m.first.label +
                        "' has no e_ref (its file gives none, or the entry gives it another geometry, charge or "
                        "spin than the file's, to which the file's e_ref does not belong; use references: auto or "
                        "ccsd_t)");
    // The basis of a reference nnvmc will compute must build on the molecule: checked now,
    // before the output directory exists (an open shell gets no CCSD(T) reference, and a note
    // saying why, from compute_references).
    const bool computed = spec.references == ReferenceMode::ccsd_t ||
                          (spec.references == ReferenceMode::automatic && !system.e_ref);
    if (computed && system.n_up() == system.n_down()) {
      basis_used = true;
      try {
        (void)scf::make_basis(spec.reference_basis, system);
      } catch (const InputError& e) {
        throw ConfigError("'reference_basis' (molecule '" + m.first.label + "'): " + e.what());
      }
    }
    spec.molecules.push_back(m.first);
  }
  // A reference_basis no reference uses is still a basis (a misspelt one went unnoticed while
  // every molecule had its e_ref).
  if (!basis_used) {
    try {
      (void)scf::basis_file_path(spec.reference_basis);
    } catch (const InputError& e) {
      throw ConfigError(std::string("'reference_basis': ") + e.what());
    }
  }


  // Optional axes iterate once with "not given" when absent.
  const std::vector<AxisEntry> none{AxisEntry{}};
  const auto& lap_axis = laplacians.empty() ? none : laplacians;
  const auto& opt_axis = optims.empty() ? none : optims;
  const auto& dt_axis = dtypes.empty() ? none : dtypes;
  for (const auto& a : ansatze)
    for (size_t mi = 0; mi < molecules.size(); ++mi)
      for (const auto& lap : lap_axis)
        for (const auto& opt : opt_axis)
          for (const auto& dt : dt_axis) {
            YAML::Node node = YAML::Clone(a.base);
            if (!node.IsMap()) node = YAML::Node(YAML::NodeType::Map);
            refuse_system_keys(node, "ansatze (" + a.label + ")");
            if (a.model.IsMap()) merge_into(node, "model", a.model);  // (a run-config entry has none)
            // An ansatz without parameters (the bare HF determinant, a baseline) is evaluated as
            // built: the common training budget does not apply to it, nor does the optim axis
            // (one cell, not one identical run per optimizer; its optimizer column reads "none").
            const bool trainable = builds_trainable_ansatz(node);
            if (!trainable && &opt != &opt_axis.front()) continue;
            Cell cell;
            cell.ansatz = a.label;
            cell.molecule = molecules[mi].first.label;
            cell.molecule_index = static_cast<int>(mi);
            cell.id = a.label + "__" + cell.molecule;
            for (const auto* axis : {&lap, trainable ? &opt : nullptr, &dt})
              if (axis != nullptr && !axis->label.empty()) cell.id += "__" + axis->label;
            node["system"] = YAML::Clone(molecules[mi].second);
            // (An absent axis entry holds a null node, which must not replace the base's value.)
            if (lap.value.IsScalar()) set_path(node, {"hamiltonian", "laplacian"}, lap.value);
            if (trainable && opt.value.IsScalar()) set_path(node, {"optim", "type"}, opt.value);
            if (dt.value.IsScalar()) set_path(node, {"run", "dtype"}, dt.value);
            const auto set_int = [&](const std::vector<std::string>& path, long long v) {
              set_path(node, path, YAML::Node(v));
            };
            if (f.iterations) set_int({"optim", "iterations"}, *f.iterations);
            else if (f.minutes > 0) set_int({"optim", "iterations"}, kUnboundedIterations);
            // The cell's config carries the wall-time budget, so `nnvmc train --resume` of a cell
            // ends where the comparison would.
            if (f.minutes > 0) set_path(node, {"optim", "minutes"}, YAML::Node(f.minutes));
            if (f.walkers) set_int({"sampler", "walkers"}, *f.walkers);
            if (f.eval_steps) set_int({"eval", "steps"}, *f.eval_steps);
            if (f.threads) set_int({"run", "threads"}, *f.threads);
            if (f.seed) set_int({"run", "seed"}, *f.seed);
            // (after the common budget: an optim entry's own iterations were overwritten by it)
            if (trainable && opt.value.IsMap()) merge_into(node, "optim", opt.value);
            apply_overrides(node, f.overrides, "overrides");
            apply_overrides(node, a.overrides, "ansatze overrides of " + a.label);
            set_path(node, {"run", "output"}, YAML::Node(spec.output + "/cells/" + cell.id));
            set_path(node, {"run", "name"}, YAML::Node(cell.id));
            const std::string cell_where = where + " (cell " + cell.id + ")";
            config_yaml::read_struct(node, cell.config, "", cell_where);
            config_yaml::apply_dependent_defaults(cell.config, node);  // as `nnvmc train` of the same config
            if (!trainable) cell.config.optim.iterations = cell.config.pretrain.steps = 0;
            try {
              validate(cell.config);
              require_walkers_to_train(cell.config);  // (train checks it later; a cell must now)
            } catch (const ConfigError& e) {
              throw ConfigError(cell_where + ": " + e.what());
            }
            for (const auto& other : spec.cells)  // (labels joined by "__" can meet: "a__b" x "c" and "a" x "b__c")
              if (other.id == cell.id)
                throw ConfigError(where + ": cells " + other.ansatz + " x " + other.molecule + " and " + cell.ansatz +
                                  " x " + cell.molecule + " would share the directory cells/" + cell.id +
                                  " (with their axis entries); give the ansatz, the molecule or the axis entry a "
                                  "'label' (a molecule a 'name') without '__'");
            cell.laplacian = cell.config.hamiltonian.laplacian;
            cell.optim = !trainable ? "none" : opt.label.empty() ? cell.config.optim.type : opt.label;
            cell.dtype = cell.config.run.dtype;
            spec.cells.push_back(std::move(cell));
          }
  return spec;
}

CompareSpec load_compare_spec(const std::string& path, const std::vector<std::string>& overrides) {
  std::error_code ec;
  if (fs::exists(path, ec) && !fs::is_regular_file(path, ec))
    throw ConfigError(path + ": cannot open comparison file (not a regular file)");
  std::ifstream in(path);
  if (!in) throw ConfigError(path + ": cannot open comparison file");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_compare_spec(ss.str(), overrides, path, fs::path(path).parent_path().string());
}

}  // namespace nnvmc::compare
