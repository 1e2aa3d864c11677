#pragma once
/// @file checkpoint.hpp
/// Training checkpoints: one HDF5 file with parameters (by name), optimizer state, sampler
/// state, iteration, resolved config and a format version. Written atomically (temp file +
/// rename) and never with NaN/Inf.
#include <torch/torch.h>

#include <string>
#include <vector>

#include "sampler/metropolis.hpp"
#include "train/optimizer.hpp"

namespace nnvmc {

/// Format version written to checkpoint files. Version 3: a list of molecules (system/<i>/,
/// sampler/<i>/, laplacian/<i>/ for molecule i = 0, 1, ...; names in the attribute
/// `molecule_names`, one per line). Version 2 files (one molecule: system/, sampler/,
/// laplacian/rng_state) are still read, as a list of one. Version 4 (2026-12-05) adds the
/// attribute `run_id`, which the checksum covers (so a version-3 reader would call it damaged);
/// version-3 files, without it, are still read. Version 5 (2026-12-06) adds the attribute
/// `history` (what the run's resumes changed), which the checksum covers when present (so a
/// version-4 reader would call such a file damaged); version-4 files, without it, are still read.
constexpr int kCheckpointVersion = 5;

/// The state of one molecule of a run.
struct MoleculeCheckpoint {
  System system;                ///< the molecule (name included) trained on
  SamplerState sampler;         ///< walkers, log|ψ|, step size, RNG
  torch::Tensor laplacian_rng;  ///< RNG state of a stochastic Laplacian (may be undefined)
};

/// Everything needed to continue a run.
struct Checkpoint {
  std::int64_t iteration = 0;   ///< completed iterations
  /// Wall time of the training iterations so far, summed over resumes (optim.minutes counts
  /// it); 0 in checkpoints of nnvmc before 2026-12-04.
  double trained_seconds = 0;
  std::string config_yaml;      ///< the fully resolved config
  /// Identity of the run that wrote it (random, drawn when the run started; kept by resumes; also
  /// an attribute of the run's result.h5, so a checkpoint of another run is not resumed into
  /// it). Empty in checkpoints of nnvmc before 2026-12-05.
  std::string run_id;
  /// What the run's resumes changed, as a JSON array of {"iteration": N, "changes": "key a -> b, ..."}
  /// (the run is then one chain under several settings, which config.yaml alone does not say);
  /// empty when no resume changed a setting.
  std::string history;
  std::vector<MoleculeCheckpoint> molecules;  ///< per molecule of the run, in order (at least one)
  TensorMap parameters;         ///< model parameters by name (never buffers or geometry)
  /// Untrained tensors that define ψ (WaveFunction::frozen_state, e.g. PauliNet's frozen HF
  /// orbitals); empty in checkpoints of nnvmc before 2026-12-03.
  TensorMap frozen;
  TensorMap optimizer;          ///< optimizer state by name
  /// The file's checksum as read (load_checkpoint fills it; not written: the file's own is
  /// computed): ranks that read the run's checkpoint compare it (one file, not per-node copies).
  std::string checksum;
};

/// Writes `ckpt` to `path` atomically. @throws NumericalError if any tensor is non-finite
/// (the existing file is kept), CheckpointError on I/O failure.
void save_checkpoint(const std::string& path, const Checkpoint& ckpt);

/// Reads a checkpoint. @throws CheckpointError for missing/corrupt files or a wrong version.
Checkpoint load_checkpoint(const std::string& path);

/// Parameters of a module by name (detached copies).
TensorMap module_state(const torch::nn::Module& module);
/// Whether `name` is a parameter an earlier model version registered without using it, which
/// loading leaves out (Orbformer's `electrons.edge_scale*` without edge features, before 2026-12-02).
bool is_retired_parameter(const std::string& name);

/// Copies named tensors into the module's parameters. Parameters that earlier versions of the
/// models registered without using them (Orbformer's `edge_scale*` without edge features,
/// before 2026-12-02) are always left out, with a log line.
/// @throws CheckpointError for missing names, shape mismatches, and names the module lacks
/// (another model: loading the overlap would evaluate, and then overwrite, a different
/// wavefunction; on resume, eval and model.init_from alike).
void load_module_state(torch::nn::Module& module, const TensorMap& state);

/// Loads the checkpoint's frozen tensors into `wf` (see WaveFunction::frozen_state). A
/// checkpoint written before they were kept has none: `wf` keeps its recomputed ones, with a
/// warning when it has any. @throws CheckpointError for a missing name or another shape.
void load_frozen_state(WaveFunction& wf, const Checkpoint& c);

/// Whether parameters trained on `trained` may evaluate `target` with ansatz `wf`: always when
/// the nuclear charges (in order) and electron counts agree (another geometry: true is
/// returned only when it is the same geometry), and for transferable ansätze.
/// @return true when `target` has the same geometry as `trained` (to 1e-12 bohr)
/// @throws InputError naming both molecules when the parameters cannot describe `target`
bool check_checkpoint_system(const System& trained, const System& target, const WaveFunction& wf);

/// Loads a checkpoint's trained state into `wf` for a run on `targets` (evaluation, model.init_from):
/// its parameters (load_module_state), and its frozen tensors when every target sits
/// at the trained geometry, to which they belong (PauliNet's Hartree–Fock orbitals); at another
/// geometry, or for a transferable model, `wf` keeps the ones it computed for `targets`.
/// @return whether the frozen tensors were loaded
/// @throws InputError as check_checkpoint_system, CheckpointError as the two loaders
bool load_trained_state(WaveFunction& wf, const Checkpoint& c, const std::vector<const System*>& targets);

}  // namespace nnvmc
