#include "app/run_args.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "core/config.hpp"
#include "core/config_yaml.hpp"
#include "core/errors.hpp"
#include "core/yaml_document.hpp"
#include "models/registry.hpp"
#include "core/log.hpp"
#include "core/molecule_list.hpp"
#include "train/checkpoint.hpp"

namespace nnvmc::app {

void check_model_type(const Config& config, const RunArgs& ra) {
  try {
    (void)model_registry().traits(config.model.type);
  } catch (const ConfigError& e) {
    YAML::Node root;
    if (!ra.file.empty()) try {
        std::ifstream in(ra.file);
        std::stringstream text;
        text << in.rdbuf();
        root = load_yaml_document(text.str(), ra.file);
      } catch (const std::exception&) {  // (read before: the message stays as it is)
      }
    throw ConfigError(config_yaml::located_setting_error(e.what(), root, ra.overrides, ra.file));
  }
}

RunArgs split_run_args(const std::vector<std::string>& args) {
  RunArgs out;
  for (const auto& a : args) {
    // key.path=value, unless it has a '/' before its '=', or, before the CONFIG or run argument,
    // names a file or directory (a sweep's "lr=0.1/"): those are that argument
    const auto eq = a.find('=');
    std::error_code ec;
    const bool override_like = eq != std::string::npos && a.substr(0, eq).find('/') == std::string::npos &&
                               !(out.file.empty() && std::filesystem::exists(a, ec));
    if (override_like) {
      // a key given twice is refused, as in a YAML file (which one was meant?)
      const std::string key = a.substr(0, eq);
      for (const auto& o : out.overrides)
        if (o.substr(0, o.find('=')) == key)
          throw InputError("override '" + key + "' given twice on the command line ('" + o + "' and '" + a + "')");
      out.overrides.push_back(a);
    } else if (out.file.empty()) {
      out.file = a;
    } else {
      throw InputError("unexpected argument '" + a + "' (overrides look like key.path=value)");
    }
  }
  return out;
}

std::string checkpoint_molecules(const Checkpoint& c) {
  std::vector<std::string> names;
  for (const auto& m : c.molecules) names.push_back(m.system.name);
  names = unique_molecule_names(names);  // as the run named them (quotes cannot occur)
  std::string list = "[";
  for (size_t k = 0; k < c.molecules.size(); ++k)
    list += (k ? ", " : "") + inline_molecule_entry(c.molecules[k].system, names[k]);
  return list + "]";
}

}  // namespace nnvmc::app
