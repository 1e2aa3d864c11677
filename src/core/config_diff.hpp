#pragma once
/// @file config_diff.hpp
/// The settings in which two run configs differ, key by key (a resume's changed settings, a
/// comparison cell run with another configuration).
#include <string>
#include <vector>

#include "core/config.hpp"

namespace nnvmc {

/// One setting that differs between two configs: its key path and both values as YAML text
/// ("(unset)" where a config has none).
struct SettingChange {
  std::string key, before, after;
};

/// Every leaf setting in which `now` differs from `before`, in key order.
std::vector<SettingChange> setting_changes(const Config& before, const Config& now);

/// "key before -> after, ..." of `changes` ("" when there are none).
std::string describe_changes(const std::vector<SettingChange>& changes);

}  // namespace nnvmc
