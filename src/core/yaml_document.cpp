#include "core/yaml_document.hpp"

#include <map>
#include <vector>

#include "core/errors.hpp"

namespace nnvmc {

namespace {
std::string at_line(const std::string& where, const YAML::Mark& mark) {
  return mark.is_null() ? where : where + ":" + std::to_string(mark.line + 1);
}
}  // namespace

namespace {
/// check_unique_keys over nodes not seen yet: an alias (*a) is the node its anchor (&a) names,
/// walked once (walked at each use, ten lines of nested aliases took minutes: a user audit).
void check_unique_keys(const YAML::Node& node, const std::string& where, std::multimap<int, YAML::Node>& seen_nodes) {
  if (!node.IsSequence() && !node.IsMap()) return;
  const auto [first, last] = seen_nodes.equal_range(node.Mark().pos);
  for (auto it = first; it != last; ++it)
    if (it->second.is(node)) return;
  seen_nodes.emplace(node.Mark().pos, node);
  if (node.IsSequence()) {
    for (const auto& item : node) check_unique_keys(item, where, seen_nodes);
  } else {
    std::map<std::string, YAML::Mark> seen;
    for (const auto& kv : node) {
      if (kv.first.IsScalar()) {
        const auto [it, fresh] = seen.emplace(kv.first.Scalar(), kv.first.Mark());
        if (!fresh)
          throw ConfigError(at_line(where, kv.first.Mark()) + ": key '" + kv.first.Scalar() + "' given twice" +
                            (it->second.is_null() ? "" : " (first on line " + std::to_string(it->second.line + 1) + ")"));
      }
      check_unique_keys(kv.second, where, seen_nodes);
    }
  }
}
}  // namespace

void check_unique_keys(const YAML::Node& node, const std::string& where) {
  std::multimap<int, YAML::Node> seen_nodes;
  check_unique_keys(node, where, seen_nodes);
}

YAML::Node load_yaml_document(const std::string& text, const std::string& where) {
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(text);
  } catch (const YAML::Exception& e) {
    throw ConfigError(at_line(where, e.mark) + ": malformed YAML: " + e.msg);
  }
  for (std::size_t i = 1; i < docs.size(); ++i)
    if (docs[i] && !docs[i].IsNull())
      throw ConfigError(at_line(where, docs[i].Mark()) +
                        ": a second YAML document (after '---'); a file holds one document");
  if (docs.empty()) return YAML::Node();
  check_unique_keys(docs.front(), where);
  return docs.front();
}

}  // namespace nnvmc
