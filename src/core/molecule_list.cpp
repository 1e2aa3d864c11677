#include "core/molecule_list.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/config_yaml.hpp"
#include "core/elements.hpp"
#include "core/errors.hpp"
#include "core/log.hpp"
#include "core/yaml_document.hpp"

namespace nnvmc {
namespace fs = std::filesystem;

const std::vector<std::string> kReservedMoleculeNames = {
    "energy", "variance", "acceptance", "step_size", "learning_rate", "excluded_walkers", "seconds",
    "initial_loss", "final_loss", "e_hf"};

bool looks_like_path(const std::string& s) { return s.find('/') != std::string::npos || fs::path(s).has_extension(); }

namespace {

/// A molecule name or path; relative paths are taken relative to `base_dir` (empty: as given).
System load_entry_file(const std::string& spec, const std::string& base_dir) {
  std::string p = spec;
  if (looks_like_path(spec) && !base_dir.empty() && fs::path(spec).is_relative()) p = (fs::path(base_dir) / spec).string();
  return load_molecule(p, default_molecules_dir());
}

/// A bare list of atoms: [[symbol, x, y, z], ...].
bool is_atom_list(const YAML::Node& n) {
  return n.IsSequence() && n.size() > 0 && n[0].IsSequence() && n[0].size() == 4 && n[0][0].IsScalar();
}

/// What an entry without a name adds to its molecule's name when it changes the charge or spin
/// ("lih_cation", "h_anion", "ch4_charge+2", "h2_spin2"): a comparison of a molecule and its ion
/// called them "h" and "h-2", and a list of both logged two "h".
std::string ion_suffix(const System& s, const System& file) {
  std::string out;
  if (s.charge != file.charge)
    out += s.charge == 1 ? "_cation" : s.charge == -1 ? "_anion" : strfmt("_charge%+d", s.charge);
  // (the spin the entry would have had: the file's with its charge, else the lowest)
  const int usual = s.charge == file.charge ? file.spin : std::abs(s.n_electrons() % 2);
  if (s.spin != usual) out += strfmt("_spin%d", s.spin);
  return out;
}

/// {molecule: NAME-OR-PATH, geometry, units, name, charge, spin}.
System molecule_with_geometry(const YAML::Node& e, const std::string& key, const std::string& base_dir) {
  static const std::vector<std::string> known = {"molecule", "geometry", "units", "name", "charge", "spin"};
  for (const auto& kv : e) {
    const std::string k = kv.first.IsScalar() ? kv.first.Scalar() : "";
    if (std::find(known.begin(), known.end(), k) == known.end())
      throw ConfigError("'" + key + "': unknown key '" + k + "'" + config_yaml::suggestion(k, known) +
                        " (an entry with 'molecule:' takes geometry, units, name, charge, spin)");
  }
  if (!e["molecule"].IsScalar()) throw ConfigError("'" + key + ".molecule' must be a molecule name or a file path");
  if (e["units"] && !e["geometry"])  // (it was ignored: the molecule kept its file's coordinates)
    throw ConfigError("'" + key + ".units' applies to a 'geometry', which this entry does not give (the molecule's "
                      "own coordinates are read in its file's units)");
  System s = load_entry_file(e["molecule"].Scalar(), base_dir);
  const System file = s;
  // Without `units:`, the geometry is in the units of the molecule's own file (an .xyz file's
  // angstrom, a YAML file's `units`).
  double scale = s.source_units == "angstrom" ? kBohrPerAngstrom : 1.0;
  try {
    if (e["units"]) {
      try {
        scale = bohr_per_unit(e["units"].as<std::string>(), "'" + key + ".units'");
      } catch (const InputError& bad) {
        throw ConfigError(bad.what());
      }
    }
    if (const auto g = e["geometry"]) {
      if (!g.IsSequence() || g.size() != s.atoms.size())
        throw ConfigError(strfmt("'%s.geometry' must list %zu positions [x, y, z], one per atom of '%s'", key.c_str(),
                                 s.atoms.size(), s.name.c_str()));
      for (size_t i = 0; i < s.atoms.size(); ++i) {
        if (!g[i].IsSequence() || g[i].size() != 3)
          throw ConfigError(strfmt("'%s.geometry[%zu]' must be [x, y, z]", key.c_str(), i));
        for (int k = 0; k < 3; ++k) {
          const double x = g[i][k].as<double>();
          if (!std::isfinite(x)) throw ConfigError(strfmt("'%s.geometry[%zu]' must be finite", key.c_str(), i));
          s.atoms[i].position[k] = x * scale;
        }
      }
    }
    if (e["charge"]) {
      s.charge = e["charge"].as<int>();
      s.entry_charge = true;
    }
    if (e["spin"]) {
      s.spin = e["spin"].as<int>();
      s.spin_given = true;
      s.entry_spin = true;
    } else if (!s.spin_given || s.charge != file.charge) {
      // the lowest, after the entry's charge (as resolve_molecules and --charge do): the file's
      // spin is its own charge's ({molecule: h, charge: -1} was refused for H's spin 1: a user audit)
      s.spin = std::abs(s.n_electrons() % 2);
      s.spin_given = false;
    }
    if (e["name"]) {
      s.name = e["name"].as<std::string>();
      s.name_explicit = true;
    } else
      s.name += ion_suffix(s, file);
  } catch (const YAML::Exception&) {
    throw ConfigError("'" + key + "': geometry must hold numbers, name a string, charge and spin integers");
  }
  // The file's reference energy belongs to its own molecule: kept for an entry that only names it
  // (it was dropped, and a comparison computed a CCSD(T) reference in place of an exact one),
  // also where the entry moves or turns it as a whole (centred coordinates lost it, a user audit).
  if (!congruent(s, file)) {
    s.e_ref.reset();
    s.e_ref_source.clear();
  }
  // (the nuclei alone: another charge or spin is said by the name's ion suffix)
  System nuclei = file;
  nuclei.atoms = s.atoms;
  s.entry_geometry = !congruent(nuclei, file);
  return s;
}

}  // namespace

System parse_molecule_entry(const YAML::Node& e, const std::string& key, const std::string& base_dir, size_t index) {
  if (e.IsScalar()) return load_entry_file(e.Scalar(), base_dir);
  if (e.IsMap() && e["molecule"]) return molecule_with_geometry(e, key, base_dir);
  if (e.IsMap() || is_atom_list(e)) {
    System s = parse_molecule_yaml(YAML::Dump(e), key);
    if (s.name.empty()) s.name = "inline" + std::to_string(index + 1);
    return s;
  }
  throw ConfigError("'" + key + "' must be a molecule name, a file path, a list of atoms or a mapping");
}

namespace {

/// The entries of a list node; a bare list of atoms is one molecule.
std::vector<System> parse_list(const YAML::Node& list, const std::string& key, const std::string& base_dir) {
  if (is_atom_list(list)) return {parse_molecule_entry(list, key, base_dir, 0)};
  if (!list.IsSequence() || list.size() == 0)
    throw ConfigError("'" + key + "' must be a non-empty list of molecules");
  std::vector<System> out;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string k = key + "[" + std::to_string(i) + "]";
    try {
      out.push_back(parse_molecule_entry(list[i], k, base_dir, i));
    } catch (const ConfigError&) {
      throw;
    } catch (const InputError& err) {
      // An inline entry's own parse names it already, with a line of its re-read text ("K:1:"):
      // the key once, with the entry's line in the file where there is one
      std::string what = err.what();
      if (what.rfind(k + ":", 0) == 0) {
        const auto rest = what.find(": ", k.size());
        what = rest == std::string::npos ? what.substr(k.size() + 1) : what.substr(rest + 2);
      }
      // (lines are the file's only in a dataset file: system.molecules is re-read from its text)
      const bool has_line = key.rfind("system.dataset", 0) == 0 && !list[i].Mark().is_null() && list[i].Mark().line >= 0;
      throw InputError("'" + k + "'" + (has_line ? strfmt(" (line %d)", list[i].Mark().line + 1) : std::string()) +
                       ": " + what);
    }
  }
  return out;
}

YAML::Node load_yaml(const std::string& text, const std::string& where) {
  return load_yaml_document(text, where);
}

/// system.molecule: a name, path, inline atoms, or an entry of a list ({molecule: h, charge: -1}):
/// the one-molecule list.
System single_molecule(const std::string& spec) {
  try {
    // (an entry was read as a molecule name, "unknown molecule '{molecule: h, charge: -1}'", a user audit)
    if (spec.find("molecule") != std::string::npos) {
      YAML::Node n;
      try {
        n = load_yaml(spec, "system.molecule");
      } catch (const InputError&) {  // (not YAML: a name or path, read below)
      }
      if (n.IsMap() && n["molecule"]) return parse_molecule_entry(n, "system.molecule", "", 0);
    }
    const bool inline_atoms = spec.find('[') != std::string::npos || spec.find('\n') != std::string::npos;
    System s = inline_atoms ? parse_molecule_yaml(spec, "system.molecule") : load_molecule(spec, default_molecules_dir());
    if (inline_atoms && s.name.empty()) s.name = "inline";
    return s;
  } catch (const ConfigError&) {
    throw;
  } catch (const InputError& e) {
    throw InputError(std::string("system.molecule: ") + e.what());
  }
}

}  // namespace

std::string usable_molecule_name(std::string n) {
  for (char& ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_' && ch != '.' && ch != '+' && ch != '-') ch = '_';
  if (n.empty() || n == "." || n == "..") n = "molecule";
  return n;
}

std::vector<std::string> unique_molecule_names(const std::vector<std::string>& names, const std::vector<bool>& explicit_names) {
  std::vector<std::string> usable;
  for (const auto& n : names) usable.push_back(usable_molecule_name(n));
  const auto reserved = [](const std::string& n) {
    return std::find(kReservedMoleculeNames.begin(), kReservedMoleculeNames.end(), n) != kReservedMoleculeNames.end();
  };
  // First every name as given (usable unchanged, not reserved) goes to its first entry, an
  // explicit one (a `name:`) before a default one; then the rest are numbered past every name
  // that was given, so a repeat never takes a given name: in [he, he, he_2] the given he_2 stays
  // he_2 (the second he becomes he_3).
  std::vector<std::string> out(names.size());
  std::set<std::string> assigned, given(usable.begin(), usable.end());
  for (const bool first_explicit : {true, false})
    for (std::size_t i = 0; i < names.size(); ++i) {
      const bool is_explicit = i < explicit_names.size() && explicit_names[i];
      if (is_explicit == first_explicit && out[i].empty() && names[i] == usable[i] && !reserved(usable[i]) &&
          assigned.insert(usable[i]).second)
        out[i] = usable[i];
    }
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (!out[i].empty()) continue;
    std::string u = usable[i];
    if (assigned.count(u) || reserved(u))
      for (int k = 2; assigned.count(u) || given.count(u) || reserved(u); ++k) u = usable[i] + "_" + std::to_string(k);
    assigned.insert(u);
    out[i] = u;
  }
  return out;
}

std::string inline_molecule_entry(const System& s, const std::string& name) {
  YAML::Emitter quoted;  // (a name such as "h2: stretched" or "[x]" stays one string)
  quoted << YAML::DoubleQuoted << name;
  std::string out =
      strfmt("{name: %s, units: bohr, charge: %d, spin: %d, atoms: [", quoted.c_str(), s.charge, s.spin);
  for (std::size_t i = 0; i < s.atoms.size(); ++i) {
    const auto& a = s.atoms[i];
    out += strfmt("%s[%s, %.17g, %.17g, %.17g]", i ? ", " : "", element_symbol(a.Z).c_str(), a.position[0],
                  a.position[1], a.position[2]);
  }
  out += "]";
  if (s.e_ref) {  // (the reference travels with its molecule: an evaluation states it)
    YAML::Emitter source;
    source << YAML::DoubleQuoted << s.e_ref_source;
    out += strfmt(", e_ref: %.17g", *s.e_ref) + (s.e_ref_source.empty() ? "" : ", e_ref_source: " + std::string(source.c_str()));
  }
  return out + "}";
}

std::vector<System> resolve_molecules(const SystemConfig& config) {
  std::vector<System> out;
  std::string key = "system.molecule";
  if (config.molecules) {
    key = "system.molecules";
    const std::string& text = config.molecules->yaml;
    // A scalar is one molecule (system.molecules=lih on the command line).
    const YAML::Node n = load_yaml(text, key);
    out = n.IsScalar() ? std::vector<System>{parse_molecule_entry(n, key, "", 0)} : parse_list(n, key, "");
  } else if (config.dataset) {
    key = "system.dataset";
    const std::string& path = *config.dataset;
    std::error_code ec;
    if (fs::is_directory(path, ec)) throw InputError("system.dataset: '" + path + "' is a directory, not a YAML file");
    if (!fs::is_regular_file(path, ec)) throw InputError("system.dataset: '" + path + "': no such file");
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    const YAML::Node doc = load_yaml(ss.str(), path);
    const std::string where = "system.dataset (" + path + ")";
    // A map holds the list under `molecules:` and nothing else: a `units:` or `charge:` beside it
    // was silently ignored (a user audit: H2 given in angstrom trained at 0.74 bohr).
    if (doc.IsMap() && doc["molecules"])
      for (const auto& kv : doc) {
        const std::string k = kv.first.IsScalar() ? kv.first.Scalar() : "";
        if (k != "molecules")
          throw ConfigError(strfmt("%s: line %d: unknown key '%s' (a dataset file is a list of molecules, or a map "
                                   "whose only key is 'molecules'; give units, charge and spin in each entry)",
                                   where.c_str(), kv.first.Mark().line + 1, k.c_str()));
      }
    const YAML::Node n = doc.IsMap() && doc["molecules"] ? doc["molecules"] : doc;
    out = parse_list(n, where, fs::path(path).parent_path().string());
  } else {
    out = {single_molecule(config.molecule ? config.molecule->yaml : "lih")};
  }
  std::vector<std::string> names;
  std::vector<bool> explicit_names;
  for (const auto& s : out) {
    names.push_back(s.name);
    explicit_names.push_back(s.name_explicit);
  }
  names = unique_molecule_names(names, explicit_names);
  // Renamed entries are said, once per name: two entries named x became x and x_2, and x@1 became
  // x_1, without a word (a user audit); the names are what result.h5, summary.json and eval
  // --molecule use.
  if (out.size() > 1) {
    static std::set<std::string> said;  // (molecules are resolved more than once per command)
    std::map<std::string, std::vector<std::string>> shared;  // usable name -> the names its entries got
    for (size_t i = 0; i < out.size(); ++i) shared[usable_molecule_name(out[i].name)].push_back(names[i]);
    for (const auto& [name, got] : shared) {
      if (got.size() < 2 || !said.insert(key + ":" + name).second) continue;
      std::string list;
      for (const auto& g : got) list += (list.empty() ? "" : ", ") + g;
      log::info(strfmt("%s: %zu entries are named '%s': they are called %s (give each a name: to choose)", key.c_str(),
                       got.size(), name.c_str(), list.c_str()));
    }
    for (size_t i = 0; i < out.size(); ++i)
      if (usable_molecule_name(out[i].name) != out[i].name && said.insert(key + ":" + out[i].name).second)
        log::warn(strfmt("%s: the molecule name '%s' is called '%s' (names keep letters, digits and _ . + -)",
                         key.c_str(), out[i].name.c_str(), names[i].c_str()));
  }
  for (size_t i = 0; i < out.size(); ++i) {
    System& s = out[i];
    const std::string usable = usable_molecule_name(s.name);
    if (names[i] != usable &&
        std::find(kReservedMoleculeNames.begin(), kReservedMoleculeNames.end(), usable) != kReservedMoleculeNames.end()) {
      static std::set<std::string> warned;  // (molecules are resolved more than once per command)
      if (warned.insert(usable).second)
        log::warn("molecule name '" + usable + "' is the name of a run-level series in result.h5 and summary.json: "
                  "the molecule is called '" + names[i] + "' there (and for eval --molecule)");
    }
    s.given_name = s.name;
    s.name = names[i];
    const int charge = s.charge, spin = s.spin;
    // (said: a user audit found {molecule: li, charge: 1} trained neutral under system.charge=0,
    // still called li_cation, without a word)
    static std::set<std::string> replaced;  // (molecules are resolved more than once per command)
    if (config.charge && s.entry_charge && *config.charge != charge &&
        replaced.insert(key + "/charge/" + s.name).second)
      log::warn(strfmt("%s: system.charge=%d replaces the charge %d that the entry '%s' gives (its name stays)",
                       key.c_str(), *config.charge, charge, s.name.c_str()));
    if (config.spin && s.entry_spin && *config.spin != spin && replaced.insert(key + "/spin/" + s.name).second)
      log::warn(strfmt("%s: system.spin=%d replaces the spin %d that the entry '%s' gives (its name stays)",
                       key.c_str(), *config.spin, spin, s.name.c_str()));
    if (config.charge) s.charge = *config.charge;
    if (config.spin) {
      s.spin = *config.spin;
    } else if (!s.spin_given || s.charge != charge) {  // the lowest, after the charge (as --charge takes it)
      s.spin = std::abs(s.n_electrons() % 2);
      static std::set<std::string> said;  // (molecules are resolved more than once per command)
      if (s.spin_given && s.spin != spin && said.insert(s.name + "/" + std::to_string(s.charge)).second)
        log::info(strfmt("system.charge=%d: molecule '%s' has %d electrons and takes the lowest spin, %d (its file "
                         "gives %d for charge %d); set system.spin for another",
                         s.charge, s.name.c_str(), s.n_electrons(), s.spin, spin, charge));
    }
    if (s.charge != charge || s.spin != spin) {  // another state: the file's reference energy is not its
      s.e_ref.reset();
      s.e_ref_source.clear();
    }
    const std::string who = key + (out.size() > 1 ? "[" + std::to_string(i) + "] (" + s.name + ")" : "");
    // system.charge and system.spin apply to every molecule of a list: one spin cannot suit
    // electron counts of both parities (a user audit followed the advice below into another error)
    const std::string per_entry = out.size() > 1 ? "; system.charge and system.spin apply to every molecule of the "
                                                   "list: to give molecules different ones, set charge: and spin: in "
                                                   "their entries of system.molecules instead"
                                                 : "";
    try {
      s.validate();
    } catch (const InputError& e) {
      // the settings that made the molecule's charge or spin are named (the message named
      // system.molecule, a key the user had not changed: a user audit)
      std::string set_by;
      if (config.charge) set_by = strfmt("system.charge=%d", *config.charge);
      if (config.spin) set_by += (set_by.empty() ? "" : ", ") + strfmt("system.spin=%d", *config.spin);
      const std::string what = e.what();  // (named where the error is about charge, spin or electrons only)
      const bool theirs = what.find("charge") != std::string::npos || what.find("spin") != std::string::npos ||
                          what.find("electron") != std::string::npos;
      throw InputError(who + ": " + what + (set_by.empty() || !theirs ? "" : " (with " + set_by + per_entry + ")"));
    }
  }
  // The same molecule twice (e.g. frames @-1 and @9 of a ten-frame file) is trained twice: legal,
  // but seldom meant.
  for (size_t i = 0; i < out.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (same_geometry(out[j], out[i])) {
        log::warn(strfmt("%s: '%s' is the same molecule as '%s' (atoms, geometry and electrons): it is trained twice",
                         key.c_str(), out[i].name.c_str(), out[j].name.c_str()));
        break;
      }
  return out;
}

}  // namespace nnvmc
