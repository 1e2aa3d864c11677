/// A two-rank training in which the last rank throws at iteration 2 while the others wait in a
/// collective. Run by mpi_abort.sh: mpirun must exit non-zero within seconds, with this rank's
/// message (main() as in nnvmc: parallel::fail after the exception).
#include <filesystem>
#include <stdexcept>

#include "core/errors.hpp"
#include "core/log.hpp"
#include "parallel/communicator.hpp"
#include "train/trainer.hpp"

int main(int argc, char** argv) {
  using namespace nnvmc;
  parallel::init_world(&argc, &argv, /*force=*/true);
  setup_logging("error");
  try {
    auto& w = parallel::world();
    Config c = parse_config(
        "system: {molecule: lih}\n"
        "model: {ferminet: {hidden_dims: [[8, 4], [8, 4]], determinants: 2}}\n"
        "sampler: {walkers: 8, steps_per_iteration: 1, burn_in: 1}\n"
        "optim: {type: adam, iterations: 100, log_every: 1000}\n"
        "pretrain: {steps: 0}\n"
        "run: {seed: 1, checkpoint_every: 0, threads: 1}\n",
        {}, "probe.yaml");
    c.run.output = (std::filesystem::temp_directory_path() / "nnvmc_mpi_fail_probe").string();
    c.run.overwrite = true;
    Trainer t(c);
    t.set_energy_hook([&w](std::int64_t it, torch::Tensor&) {
      if (it == 2 && w.rank() == w.size() - 1) throw NumericalError("injected failure on the last rank");
    });
    t.run(false);
  } catch (const std::exception& e) {
    return parallel::fail(e.what(), 1);
  }
  return 0;
}
