#pragma once
/// @file config_reference.hpp
/// The reference of every run-config setting (key path, default, meaning), made from the same
/// `visit()` lists that read and write configs, so it cannot drift from them. docs/settings.md is
/// its output (`nnvmc config --markdown`); a test checks that the file is up to date.
#include <string>
#include <vector>

namespace nnvmc {

/// One setting of a run config.
struct SettingRow {
  std::string key;            ///< dotted path, e.g. "optim.sr.damping"
  std::string default_value;  ///< the default as YAML flow text; "(unset)" for an optional without one
  std::string meaning;        ///< the field's description (its `visit()` text)
};

/// One section of a run config (system, model, ..., run) and its settings, nested ones included.
struct SettingSection {
  std::string name;      ///< top-level key, e.g. "optim"
  std::string meaning;   ///< its description
  std::vector<SettingRow> rows;
};

/// Every setting of a run config, in the order config.yaml writes them. Defaults are those of an
/// empty config: the ones that depend on another key (optim.lr, optim.lr_delay,
/// optim.determinant_balance, pretrain.steps) are those of the default optimizer and ansatz, and
/// their meaning says how they change.
std::vector<SettingSection> setting_reference();

/// setting_reference() as a Markdown page: one table per section (key, default, meaning).
std::string settings_markdown();

}  // namespace nnvmc
