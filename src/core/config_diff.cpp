#include "core/config_diff.hpp"

#include <map>
#include <set>

#include <yaml-cpp/yaml.h>

namespace nnvmc {
namespace {
/// Every leaf of a YAML document as "key.path" → value text (flow YAML).
void flatten(const YAML::Node& node, const std::string& path, std::map<std::string, std::string>& out) {
  if (node.IsMap()) {
    for (const auto& kv : node) flatten(kv.second, path.empty() ? kv.first.Scalar() : path + "." + kv.first.Scalar(), out);
  } else {
    YAML::Emitter e;
    e << YAML::Flow << node;
    out[path] = e.c_str();
  }
}
}  // namespace

std::vector<SettingChange> setting_changes(const Config& before, const Config& now) {
  std::map<std::string, std::string> a, b;
  flatten(YAML::Load(to_yaml(before)), "", a);
  flatten(YAML::Load(to_yaml(now)), "", b);
  std::set<std::string> keys;
  for (const auto& kv : a) keys.insert(kv.first);
  for (const auto& kv : b) keys.insert(kv.first);
  std::vector<SettingChange> out;
  for (const auto& key : keys) {
    const auto was = a.find(key), is = b.find(key);
    SettingChange c{key, was == a.end() ? "(unset)" : was->second, is == b.end() ? "(unset)" : is->second};
    if (c.before != c.after) out.push_back(std::move(c));
  }
  return out;
}

std::string describe_changes(const std::vector<SettingChange>& changes) {
  std::string out;
  for (const auto& c : changes) out += (out.empty() ? "" : ", ") + c.key + " " + c.before + " -> " + c.after;
  return out;
}

}  // namespace nnvmc
