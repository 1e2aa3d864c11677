/// nnvmc train [CONFIG] key=value ... [--force] | nnvmc train --resume DIR [key=value ...]
#include <algorithm>
#include <exception>
#include <filesystem>
#include <map>
#include <iostream>
#include <optional>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "app/commands.hpp"
#include "app/resume_settings.hpp"
#include "app/unused_settings.hpp"
#include "app/run_args.hpp"
#include "core/config_diff.hpp"
#include "core/config_yaml.hpp"
#include "core/molecule_list.hpp"
#include "parallel/communicator.hpp"
#include "parallel/launcher.hpp"
#include "core/errors.hpp"
#include "core/log.hpp"
#include "core/run_name.hpp"
#include "io/directory_lock.hpp"
#include "io/output_kind.hpp"
#include "train/checkpoint.hpp"
#include "train/run_checkpoint.hpp"
#include "train/summary.hpp"
#include "train/trainer.hpp"

namespace nnvmc::app {

namespace {
namespace fs = std::filesystem;

/// The recorded config (YAML) of a run copied or moved to `dir`: when its run.output names
/// another directory (the one it was copied from, or an absolute path no longer there), it names
/// `dir` (made absolute), so the run continues there, config.yaml says so, and an override moving
/// it elsewhere is still refused. A relative run.output that does not resolve from here (resumed
/// from another working directory) is left as recorded: it says nothing of where the run is.
std::string relocated(const std::string& yaml, const std::string& where, const std::string& dir) {
  const fs::path was = resolve_output_dir(parse_config(yaml, {}, where));
  std::error_code ec;
  const bool there = fs::is_directory(was, ec);
  if (there ? fs::equivalent(was, dir, ec) || ec : !was.is_absolute()) return yaml;
  const std::string now = fs::absolute(dir, ec).lexically_normal().string();
  YAML::Node root = YAML::Load(yaml);
  root["run"]["output"] = now;
  log::info("the run was written in '" + was.string() + "'; it continues in '" + now + "', which config.yaml now names");
  return YAML::Dump(root);
}

/// The recorded config (YAML) of a resumed run whose molecules cannot be read from here (a
/// relative molecule file resumed from another working directory, a file moved or deleted): its
/// `system` becomes the molecules the checkpoint holds, inline in bohr, so the run continues
/// with them and config.yaml states them (found by a user audit: such a run could not be resumed
/// although its checkpoint holds every molecule). Unchanged when the molecules resolve;
/// `recorded` is `yaml` parsed.
std::string with_checkpoint_molecules(const std::string& yaml, const Config& recorded, const Checkpoint& c,
                                      const std::vector<std::string>& overrides) {
  // An override that gives the molecules (a moved file named again) is the user's answer.
  for (const char* key : {"system.molecule", "system.molecules", "system.dataset"})
    for (const auto& o : overrides)
      if (override_sets(o, key)) return yaml;
  try {
    const log::Quiet quiet;  // (the run resolves them again, with their warnings)
    resolve_molecules(recorded.system);
    return yaml;
  } catch (const InputError& e) {
    YAML::Node root = YAML::Load(yaml);
    YAML::Node system(YAML::NodeType::Map);
    system["molecules"] = YAML::Load(checkpoint_molecules(c));
    root["system"] = system;
    log::warn(std::string(e.what()) + ": the run continues with the molecule(s) its checkpoint holds, which "
              "config.yaml now states inline");
    return YAML::Dump(root);
  }
}

/// A damaged latest checkpoint `ckpt` of the run `resume` (train --resume): the run continues from
/// the one before it, which takes its place, the damaged one kept as checkpoint.h5.damaged. Rank 0
/// alone renames (every rank renaming in turn put the good file aside: a review), the others wait
/// and share its failure. @return the checkpoint rank 0 read (empty on the other ranks)
/// @throws InputError when another process holds the run or a rename fails; CheckpointError when
/// neither checkpoint can be read.
std::optional<Checkpoint> replace_damaged_checkpoint(const std::string& resume, const std::string& ckpt) {
  auto& comm = parallel::world();
  std::exception_ptr failed;
  std::optional<Checkpoint> read;
  if (comm.is_root()) try {
      read.emplace();
      if (const std::string usable = readable_checkpoint("--resume " + resume, ckpt, &*read); usable != ckpt) {
        const fs::path dir = fs::path(ckpt).parent_path();
        if (std::string pid; io::lock_held(dir.string(), &pid))
          throw InputError("train --resume " + resume + ": in use by another nnvmc process" +
                           (pid.empty() ? "" : " (pid " + pid + ")"));
        std::error_code ec;
        fs::rename(ckpt, ckpt + ".damaged", ec);
        if (!ec) fs::rename(usable, ckpt, ec);
        if (ec)
          throw InputError("train --resume " + resume + ": cannot put " + usable + " in place of the damaged " + ckpt +
                           ": " + ec.message());
        log::warn("--resume " + resume + ": the damaged checkpoint is kept as " + ckpt + ".damaged");
      }
    } catch (...) {
      failed = std::current_exception();
    }
  if (comm.any(bool(failed))) {
    if (failed) std::rethrow_exception(failed);
    throw CheckpointError("train --resume " + resume + ": rank 0 could not read the run's checkpoint");
  }
  return read;
}

}  // namespace

void add_train_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("train", "Train a wavefunction (VMC) from a YAML config or key=value settings");
  auto args = std::make_shared<std::vector<std::string>>();
  auto resume = std::make_shared<std::string>();
  auto force = std::make_shared<bool>(false);
  cmd->add_option("args", *args,
                  "CONFIG.yaml followed by key.path=value overrides (without CONFIG: the defaults and the overrides, "
                  "e.g. system.molecule=h2)");
  cmd->add_option("--resume", *resume, "continue the run in this output directory");
  cmd->add_flag("--force", *force, "start over in an output directory that holds a run (run.overwrite=true)");
  cmd->callback([args, resume, force] {
    RunArgs ra = split_run_args(*args);
    Trainer::install_signal_handlers();
    std::unique_ptr<Trainer> trainer;
    if (!resume->empty()) {
      if (!ra.file.empty())
        throw InputError("train --resume DIR takes key=value overrides only, not the file '" + ra.file +
                         "' (the run's config is in its checkpoint)");
      if (*force) throw InputError("train: --force starts a new run; it cannot be combined with --resume");
      const std::string ckpt = run_checkpoint("--resume", *resume);
      std::optional<Checkpoint> read = replace_damaged_checkpoint(*resume, ckpt);
      // A run continues in its directory: a checkpoint file of another name made its folder the
      // run's, with results written and a config.yaml there replaced (a user audit)
      if (fs::path(ckpt).filename() != "checkpoint.h5")
        throw InputError("train --resume " + *resume + ": give a run's directory (or its checkpoint.h5); a run "
                         "continues where its checkpoint.h5 is, writing config.yaml and result.h5 beside it. To train "
                         "on from this file's parameters in a new run, give model.init_from=" + *resume);
      const Checkpoint c = read ? std::move(*read) : load_checkpoint(ckpt);
      const std::string dir = fs::path(ckpt).parent_path().string();
      const std::string here = relocated(c.config_yaml, ckpt + ":config", dir.empty() ? "." : dir);
      const Config recorded_here = parse_config(here, {}, ckpt + ":config");
      warn_of_edited_config(dir.empty() ? "." : dir, recorded_here);
      const std::string yaml = with_checkpoint_molecules(here, recorded_here, c, ra.overrides);
      const Config recorded = yaml == here ? recorded_here : parse_config(yaml, {}, ckpt + ":config");
      Config config = resumed_config(yaml, recorded, ra.overrides, ckpt + ":config");
      refuse_fixed_changes(recorded, config, *resume);
      keep_start_settings(recorded, config);
      warn_of_unused_overrides(config, ra.overrides);
      if (config.run.name != recorded.run.name) check_run_name(config.run.name);  // (as load_config checks a new run's)
      // A resumed run writes where its checkpoint is: overrides (in whatever form) may not move it.
      const bool moved = resolve_output_dir(config) != resolve_output_dir(recorded);
      if (moved)
        throw InputError("train --resume " + *resume + ": run.output cannot be changed on resume (the run continues "
                         "in its own directory; copy the directory to continue it elsewhere)");
      if (config.run.overwrite != recorded.run.overwrite)
        throw InputError("train --resume " + *resume + ": run.overwrite cannot be changed on resume (it belongs to how "
                         "the run started: --force starts a new run, and cannot be combined with --resume)");
      trainer = std::make_unique<Trainer>(config, ckpt);  // refuses another model or molecule, or a run in use, first
      log::info(strfmt("resuming %s at iteration %ld", resume->c_str(), static_cast<long>(c.iteration)));
      // (the trainer checks optim.minutes before each iteration: a spent budget trains none either)
      const bool iterations_done = config.optim.iterations <= c.iteration;
      const bool minutes_spent = config.optim.minutes > 0 && c.trained_seconds >= config.optim.minutes * 60.0;
      const bool nothing_to_train = iterations_done || minutes_spent;
      if (const std::string changed = changed_settings(recorded, config); !changed.empty()) {
        log::warn("resuming with changed settings from iteration " + std::to_string(c.iteration) + ": " + changed +
                  (!nothing_to_train
                       ? " (config.yaml will hold the new ones; summary.json's resumes_with_changes lists every such "
                         "change)"
                       : " (with nothing to train they change nothing: config.yaml keeps the checkpoint's settings)"));
        if (!nothing_to_train) trainer->record_resume_changes(changed);  // (no iteration, no change to the chain)
      }
      if (iterations_done)
        log::warn(strfmt("optim.iterations = %ld, and the run has %ld already: nothing to train, only the final "
                         "evaluation (raise optim.iterations to train on)",
                         static_cast<long>(config.optim.iterations), static_cast<long>(c.iteration)));
      else if (minutes_spent)
        log::warn(strfmt("optim.minutes = %g, and the run has trained %.2f min already: nothing to train, only the "
                         "final evaluation (raise optim.minutes to train on)",
                         config.optim.minutes, c.trained_seconds / 60.0));
    } else {
      if (ra.file.empty() && ra.overrides.empty())  // (the default LiH was never asked for)
        throw InputError("train: give a CONFIG file, key=value settings (e.g. nnvmc train system.molecule=h2 "
                         "optim.iterations=200), or --resume DIR");
      if (*force) ra.overrides.push_back("run.overwrite=true");
      const Config config = ra.file.empty() ? config_from_overrides(ra.overrides) : load_config(ra.file, ra.overrides);
      check_model_type(config, ra);
      warn_of_unused_overrides(config, ra.overrides);
      // A comparison's cells are its own to start (a run started in a cell that had not begun made
      // the comparison continue a run of another molecule); continuing one with --resume is fine.
      const fs::path out = fs::absolute(resolve_output_dir(config)).lexically_normal();
      if (out.parent_path().filename() == "cells")
        if (const std::string marker = io::comparison_marker(out.parent_path().parent_path().string()); !marker.empty())
          throw InputError("run.output: '" + out.string() + "' is a cell of the comparison in '" +
                           out.parent_path().parent_path().string() + "' (" + marker +
                           "); run the comparison to start it, or choose another run.output");
      trainer = std::make_unique<Trainer>(config);
    }
    const auto& s = trainer->setup();
    int64_t n_params = 0;
    for (const auto& p : s.wf->parameters()) n_params += p.numel();
    const std::string what = s.molecules.size() == 1 ? s.molecules[0].system.electron_summary()
                                                     : strfmt("%zu molecules", s.molecules.size());
    log::info(strfmt("%s, model %s (%ld parameters), %d walkers%s, %s, output %s", what.c_str(),
                     s.config.model.type.c_str(), static_cast<long>(n_params), s.config.sampler.walkers,
                     s.molecules.size() == 1 ? "" : " per molecule", parallel::world().describe().c_str(),
                     trainer->output_dir().c_str()));
    if (s.molecules.size() > 1)
      for (const auto& m : s.molecules) log::info("  " + m.system.electron_summary());
    const TrainOutcome out = trainer->run();
    // The final evaluation is the run's result: on stdout, as `nnvmc eval` prints it, so that
    // --log-level warn (progress off) still shows it.
    if (parallel::world().is_root()) {
      const auto& mols = trainer->setup().molecules;
      std::string text;
      for (std::size_t i = 0; i < out.evals.size() && i < mols.size(); ++i)
        text += (mols.size() > 1 ? mols[i].name() + ":\n" : "") + eval_text(out.evals[i]);
      std::cout << text << std::flush;
    }
    log::info("time per stage:");
    for (const auto& [stage, e] : trainer->timers().stages())
      log::info(strfmt("  %-13s %8.2f s  (%ld calls)", stage.c_str(), e.seconds, e.calls));
    if (parallel::world().size() > 1)
      log::info(strfmt("  time inside MPI collectives on rank 0 (incl. waiting for other ranks): %.2f s, %d ranks",
                       parallel::world().seconds_in_collectives(), parallel::world().size()));
    if (out.interrupted) {
      const int ranks = parallel::world().size();  // (a checkpoint resumes with any number of ranks)
      throw Error("interrupted; resume with: " + parallel::launch_prefix(ranks) + "nnvmc train --resume " +
                  trainer->output_dir() + (ranks > 1 ? "  (or with any other number of ranks)" : ""));
    }
  });
}

}  // namespace nnvmc::app
