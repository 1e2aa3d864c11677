#pragma once
/// @file unused_settings.hpp
/// Settings of a block the run does not use (another optimizer's, Laplacian's or ansatz's;
/// pretraining's without pretraining; the optimizer's when nothing is trained): named when given
/// as overrides, and left out of the changes a resume records.
#include <string>
#include <vector>

#include "core/config.hpp"

namespace nnvmc::app {

/// Whether the setting `key` (a full key path, e.g. "optim.sr.damping") lies in a block `config`
/// does not use (e.g. here: optim.type is not sr, minsr or spring).
bool unused_setting(const Config& config, const std::string& key);

/// Names in a warning each command-line override (`key.path=value`) that sets only settings of
/// blocks `config` does not use; a mapping is judged setting by setting.
void warn_of_unused_overrides(const Config& config, const std::vector<std::string>& overrides);

}  // namespace nnvmc::app
