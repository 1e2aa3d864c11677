/// nnvmc train CONFIG [key=value ...] | nnvmc train --resume DIR [key=value ...]
#include <filesystem>

#include "app/commands.hpp"
#include "app/run_args.hpp"
#include "core/errors.hpp"
#include "core/log.hpp"
#include "train/trainer.hpp"

namespace nnvmc::app {

void add_train_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("train", "Train a wavefunction (VMC) from a YAML config");
  auto args = std::make_shared<std::vector<std::string>>();
  auto resume = std::make_shared<std::string>();
  cmd->add_option("args", *args, "CONFIG.yaml followed by key.path=value overrides");
  cmd->add_option("--resume", *resume, "continue the run in this output directory");
  cmd->callback([args, resume] {
    const RunArgs ra = split_run_args(*args);
    Trainer::install_signal_handlers();
    std::unique_ptr<Trainer> trainer;
    if (!resume->empty()) {
      const std::string ckpt = *resume + "/checkpoint.h5";
      if (!std::filesystem::exists(ckpt))
        throw CheckpointError(*resume + ": no checkpoint.h5 to resume from");
      const Checkpoint c = load_checkpoint(ckpt);
      Config config = parse_config(c.config_yaml, ra.overrides, ckpt + ":config");
      log::info(strfmt("resuming %s at iteration %ld", resume->c_str(), static_cast<long>(c.iteration)));
      trainer = std::make_unique<Trainer>(config, ckpt);
    } else {
      if (ra.file.empty()) throw InputError("train: give a CONFIG file or --resume DIR");
      const Config config = load_config(ra.file, ra.overrides);
      trainer = std::make_unique<Trainer>(config);
    }
    const auto& s = trainer->setup();
    int64_t n_params = 0;
    for (const auto& p : s.wf->parameters()) n_params += p.numel();
    log::info(strfmt("%s: %d electrons (%d up, %d down), model %s (%ld parameters), %d walkers, output %s",
                     s.system.name.c_str(), s.system.n_electrons(), s.system.n_up(), s.system.n_down(),
                     s.config.model.type.c_str(), static_cast<long>(n_params), s.config.sampler.walkers,
                     trainer->output_dir().c_str()));
    const TrainOutcome out = trainer->run();
    log::info("time per stage:");
    for (const auto& [stage, e] : trainer->timers().stages())
      log::info(strfmt("  %-13s %8.2f s  (%ld calls)", stage.c_str(), e.seconds, e.calls));
    if (out.interrupted) throw Error("interrupted; resume with: nnvmc train --resume " + trainer->output_dir());
  });
}

}  // namespace nnvmc::app
