#pragma once
/// @file resume_settings.hpp
/// The settings of a resumed training run (`nnvmc train --resume DIR key=value ...`): the
/// recorded config with the overrides, which keys may not change, which have no effect, and
/// which changes the run records.
#include <string>
#include <vector>

#include "core/config.hpp"

namespace nnvmc::app {

/// The config of a resumed run: the recorded one (`yaml`, parsed as `recorded`) with the
/// overrides. A new optim.type takes its own defaults of optim.lr, optim.lr_delay and
/// optim.determinant_balance unless an override gives them (said in the log).
Config resumed_config(const std::string& yaml, const Config& recorded, const std::vector<std::string>& overrides,
                      const std::string& where);

/// @throws InputError naming the first model.* or pretrain.* key, or sampler.walkers or
/// run.seed, that `now` changes from `recorded` (the run `dir`).
void refuse_fixed_changes(const Config& recorded, const Config& now, const std::string& dir);

/// Settings that act only when chains start (sampler.step_size, sampler.burn_in) keep the
/// recorded values in `now`, with a warning when an override changed them.
void keep_start_settings(const Config& recorded, Config& now);

/// Warns when the run `dir`'s config.yaml was edited since the checkpoint `recorded` was written.
void warn_of_edited_config(const std::string& dir, const Config& recorded);

/// Settings a resumed run changes, adds or removes beyond how it is executed and the final
/// evaluation, as "optim.type adam -> spring, ..." ("" when none).
std::string changed_settings(const Config& recorded, const Config& now);

}  // namespace nnvmc::app
