#pragma once
/// @file trainer.hpp
/// The VMC training loop over the molecules of a run: per iteration, a batch of molecules
/// (optim.molecules_per_step) is sampled, their local energies computed and one optimizer step
/// taken over all of them; progress lines, per-iteration results in result.h5 (run-level and
/// per molecule), atomic checkpoints (periodic, at the end and on SIGINT/SIGTERM), restart from
/// a checkpoint, recovery from non-finite steps, fine-tuning from another run (model.init_from).
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "batching/device_stage_timing.hpp"
#include "core/timer.hpp"
#include "io/created_directories.hpp"
#include "io/directory_lock.hpp"
#include "io/hdf5_file.hpp"
#include "train/checkpoint.hpp"
#include "train/evaluate.hpp"
#include "train/optimizer.hpp"
#include "train/setup.hpp"
#include "train/stop_request.hpp"

namespace nnvmc {

/// What an iteration hook asks the trainer to do.
enum class StopAction {
  none,       ///< continue
  finish,     ///< end training now (a wall-time budget): checkpoint, then the final evaluation
  interrupt,  ///< stop as SIGINT/SIGTERM would: checkpoint, no evaluation, TrainOutcome::interrupted
};

/// Called with the iteration index t before each training iteration t, and once more with
/// t = optim.iterations after the last one (its answer is then ignored).
using IterationHook = std::function<StopAction(std::int64_t t)>;

/// Outcome of Trainer::run.
struct TrainOutcome {
  bool interrupted = false;   ///< stopped by SIGINT/SIGTERM (checkpoint written)
  std::int64_t iterations = 0;  ///< completed iterations
  std::int64_t failed_steps = 0;      ///< steps rejected (non-finite) and retried, in this process
  std::int64_t excluded_walkers = 0;  ///< walker samples left out for a non-finite local energy
  EvalResult final_eval;      ///< evaluation after training of the first molecule (when not interrupted)
  std::vector<EvalResult> evals;  ///< evaluation after training, per molecule of the run
};

/// Training loop. A failed step (non-finite local energies beyond a few walkers, gradient or
/// parameters) restores the last good parameters, optimizer state and walkers and retries the
/// same iteration with fresh random moves; after optim.max_consecutive_failures failures in a row
/// it writes a checkpoint of the last good state and throws NumericalError.
class Trainer {
 public:
  /// A new run (output directory from run.output). With model.init_from the parameters come
  /// from that checkpoint (a model of the same type and options); optimizer and walkers start
  /// fresh. @throws InputError when run.output holds another run (checkpoint.h5, result.h5 or
  /// summary.json) and run.overwrite is false, or cannot be written, or model.init_from cannot
  /// be loaded; nothing is written before the config, molecules and model are checked.
  explicit Trainer(const Config& config);
  /// A new run from a ready setup (e.g. a test ansatz put into setup.wf).
  explicit Trainer(VmcSetup setup);
  /// Continues the run whose checkpoint is `checkpoint_path`; `config` is the checkpoint's
  /// config with the user's overrides applied.
  Trainer(const Config& config, const std::string& checkpoint_path);

  /// Trains until optim.iterations, then evaluates and writes summary.json.
  /// @param final_eval run the final evaluation (and summary.json) after training
  TrainOutcome run(bool final_eval = true);

  const std::string& output_dir() const { return output_; }
  /// Records that this resume changed `changes` ("optim.type adam -> spring, ..."): kept in the
  /// checkpoint's history (Checkpoint::history) and summary.json's `resumes_with_changes`.
  void record_resume_changes(const std::string& changes);
  VmcSetup& setup() { return setup_; }
  const StageTimers& timers() const { return timers_; }
  /// The energies the final energy is checked against: e_hf_, or without pretraining the
  /// ansatz's built-in determinant's (PauliNet's baseline; a user audit: a PauliNet run had none).
  std::vector<HartreeFockEnergy> hartree_fock_energies() const;
  /// The stage timers (e.g. to attach a StageObserver).
  StageTimers& timers() { return timers_; }
  /// Installs a hook consulted at every iteration boundary (wall-time budgets, profiling).
  void set_iteration_hook(IterationHook hook) { hook_ = std::move(hook); }
  /// The current state as a checkpoint.
  Checkpoint checkpoint() const;

  /// Installs SIGINT/SIGTERM handlers that make a running trainer checkpoint and stop. With
  /// `second_signal_ends`, the first signal restores the default action, so a second one ends
  /// the process (interactive runs); a compare cell keeps the handler, because its runner
  /// forwards a signal the cell may already have had from its process group.
  static void install_signal_handlers(bool second_signal_ends = true);
  /// Requests a stop as a signal would (for tests).
  static void request_stop(bool stop = true);

  /// Called with (iteration t, local energies [B]) of each molecule of the iteration's batch, in
  /// order, before they are used; may modify them. For tests that inject failures.
  using EnergyHook = std::function<void(std::int64_t, torch::Tensor&)>;
  void set_energy_hook(EnergyHook hook) { energy_hook_ = std::move(hook); }

 private:
  /// The resume constructor with its checkpoint, read once (make_setup places the molecules as it has them).
  Trainer(const Config& config, const std::string& checkpoint_path, Checkpoint c);
  void prepare_new_output() const;
  void init_output(bool resume);
  /// Opens result.h5 for appending (rank 0; once): on resume, its training rows are first cut
  /// back to the checkpoint's iteration (rows after it are repeated by the chain). Deferred to
  /// the first write so that a resume refused while it starts (a memory budget measured in its
  /// first iteration) leaves the run's files as they were. @returns nullptr on other ranks
  io::H5File* open_results();
  /// On resume (rank 0), once the run's state moves on (its first checkpoint is in place, or the
  /// evaluation of a resume that trained nothing is about to be written): config.yaml takes this
  /// run's settings, and the earlier evaluation (summary.json, result.h5's eval/) goes. Until
  /// then they describe the checkpoint on disk, so a resume that fails before (a full disk at its
  /// first checkpoint) leaves them as they were.
  void settle_resumed_output();
  /// `steps` MH steps for every molecule's walkers, adapting their step sizes; in a run that
  /// trains nothing, at least what fresh walkers need (fresh_walkers_burn_in).
  void burn_in(int steps);
  /// Writes checkpoint.h5 (collective; rank 0 writes). A new run's first one retires the run
  /// --force set aside (*.previous).
  void write_checkpoint();
  /// Appends NaN to every training series of result.h5 shorter than iteration_.
  void pad_train_series(io::H5File& results) const;
  /// On resume (rank 0): a checkpoint without a run id takes the one of `path` (result.h5), or a
  /// new one. @throws InputError when `path` carries another run's run id.
  void check_run_id(const std::string& path);
  /// After rank 0 failed to write result.h5 (`why`, on every rank): writes the checkpoint and
  /// throws WriteError saying what was kept. Collective.
  [[noreturn]] void stop_after_failed_results_write(const std::string& why);
  struct MoleculeStep;
  void log_progress(std::int64_t t, const std::vector<MoleculeStep>& steps);
  /// @param results_to_write called once the evaluation is done: result.h5 on the rank that
  /// writes (opened, a resume's files cut back), nullptr on the others
  void final_evaluation(TrainOutcome& out, const std::function<io::H5File*()>& results_to_write);
  /// On a CUDA device: stage times from device events, or device waits at stage boundaries
  /// where the build has no CUDA events (device_timing_).
  void time_stages_on_device();

  VmcSetup setup_;
  std::unique_ptr<Optimizer> optimizer_;
  std::string output_;
  io::DirectoryLock lock_;  ///< held on output_ by the writing rank while this trainer lives
  StopFileWatch stop_file_;  ///< the writing rank's watch of output_/STOP (released before lock_)
  /// A new run's output until it has trained an iteration or written a checkpoint (rank 0): if
  /// the trainer ends before (a value found wrong in the first step, a failed pretraining, an
  /// interrupt in the burn-in), the files this start wrote are removed and a run it replaced
  /// (--force: *.previous) is put back. Destroyed before lock_ is released. (A process killed
  /// outright, or ended by MPI_Abort from another rank, cannot: *.previous then stay.)
  struct UnfinishedStart {
    std::string dir;  ///< "" when there is nothing to undo (first checkpoint written, a resume, other ranks)
    io::CreatedDirectories made_dirs;  ///< what this start created of `dir`: removed again while empty
    bool made_lock_file = false;  ///< this start created dir's lock file: removed with its files
    UnfinishedStart() = default;
    UnfinishedStart(const UnfinishedStart&) = delete;
    UnfinishedStart& operator=(const UnfinishedStart&) = delete;
    ~UnfinishedStart();
  } unfinished_;
  std::optional<io::H5File> results_;  ///< result.h5, rank 0 only, opened at its first write (open_results)
  bool resume_open_pending_ = false;    ///< result.h5 still to be cut back to the checkpoint (open_results)
  bool resume_settle_pending_ = false;  ///< see settle_resumed_output
  bool evaluation_only_ = false;        ///< a resume that trained nothing (settle_resumed_output)
  std::int64_t last_checkpoint_ = -1;   ///< iteration of this run's checkpoint on disk (-1: none yet)
  Config checkpoint_config_;            ///< a resume's checkpoint's settings, at this run's output and molecules
  std::int64_t iteration_ = 0;
  bool resumed_ = false;
  /// per molecule, the MH steps of the start's burn-in (burn_in; empty before it): with no
  /// iteration since, the final evaluation's walkers ran them under the wavefunction it measures
  std::vector<int> start_burn_in_;
  std::string run_id_;  ///< Checkpoint::run_id: drawn by a new run, the checkpoint's on resume (rank 0's is written)
  std::string history_;  ///< Checkpoint::history (JSON array text; "" when no resume changed anything)
  /// E_HF of each molecule from the run's pretraining (its target's basis), empty without:
  /// a final energy above it is warned about (a user audit: energies 4 Eh above E_HF, exit 0)
  std::vector<HartreeFockEnergy> e_hf_;
  /// e_hf_ of a resumed run: its pretraining's, from result.h5 (left empty where it has none).
  void read_pretraining_energies();
  /// @throws NumericalError when a training iteration's energy lies below the molecule's
  /// System::energy_lower_bound (energy_below_bound): the walkers no longer sample |ψ|² and the
  /// gradient is meaningless (a user audit: PauliNet at optim.lr=0.05 went on to −1e25 Eh, exit 0).
  /// Nothing is checkpointed: the state is damaged.
  void stop_if_diverged(const VmcMolecule& molecule, double energy, double error, std::int64_t iteration) const;
  std::string stopped_by_ = "optim.iterations";  ///< what ended the training: optim.iterations or optim.minutes
  bool previous_run_cleared_ = false;  ///< *.previous files of a run replaced by --force are gone
  /// On CUDA: each stage's time as the device sees it (CUDA events, no wait for the device when
  /// a stage closes; device waits in a build without events), so it covers the stage's kernels.
  batching::DeviceStageTiming device_timing_;
  StageTimers timers_;  ///< after device_timing_, which it uses
  double start_time_ = 0;
  bool loop_started_ = false;  ///< run() has started its iterations (at start_time_)
  double trained_before_ = 0;  ///< training seconds of the runs this one resumes (from the checkpoint)
  /// Wall time of the training iterations, summed over resumes (see optim.minutes).
  double trained_seconds() const;
  std::int64_t first_iteration_ = 0;  ///< iteration this process started at (for it/s)
  EnergyHook energy_hook_;
  IterationHook hook_;
};

/// Replaces "<name>" in run.output with run.name.
std::string resolve_output_dir(const Config& config);

/// Loads the parameters of the checkpoint `config.model.init_from` into setup.wf (fine-tuning).
/// @throws ConfigError naming model.init_from when the checkpoint holds another model type or
/// parameters of other shapes; CheckpointError for unreadable files; InputError when a
/// non-transferable ansatz's checkpoint has other atoms than the run's molecule
void init_from_checkpoint(VmcSetup& setup);

}  // namespace nnvmc
