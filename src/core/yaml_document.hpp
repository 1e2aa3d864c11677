#pragma once
/// @file yaml_document.hpp
/// Reading one YAML document strictly: a syntax error, a second document (after `---`) or a
/// key given twice in one mapping is a ConfigError naming the source and line. yaml-cpp alone
/// reads the first document silently and keeps duplicate keys, of which lookups see only the
/// first, so `lr: 0.1` followed later by `lr: 0.01` would silently train with 0.1.
#include <yaml-cpp/yaml.h>

#include <string>

namespace nnvmc {

/// Parses `text` (from `where`, e.g. a file name). Empty text gives a Null node.
/// @throws ConfigError "where:LINE: ..." for malformed YAML, extra documents, duplicate keys
YAML::Node load_yaml_document(const std::string& text, const std::string& where);

/// Throws ConfigError "where:LINE: key 'k' given twice (first on line L)" for the first
/// mapping under `node` (recursively) that holds a key twice.
void check_unique_keys(const YAML::Node& node, const std::string& where);

}  // namespace nnvmc
