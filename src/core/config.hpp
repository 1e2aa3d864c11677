#pragma once
/// @file config.hpp
/// Typed run configuration. Every struct lists its fields once in `visit()`, which the
/// YAML reader (unknown keys, wrong types → ConfigError naming the key path), the writer
/// of the resolved config and the override parser all use. Plain data: no torch here.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nnvmc {

/// A config value kept as YAML text (e.g. a molecule given inline as a list of atoms).
struct InlineYaml {
  std::string yaml;  ///< YAML text of the node (a plain scalar for names and paths)
};

/// `system:` — the molecules of a run: one (`molecule`) or several (`molecules` or `dataset`);
/// at most one of the three is given (none: lih). A run is a list of molecules; one molecule is
/// the list of length one.
struct SystemConfig {
  std::optional<InlineYaml> molecule;   ///< a name in configs/molecules/, a .yaml/.xyz path, or inline atoms
  std::optional<InlineYaml> molecules;  ///< a list of molecule entries (names, paths, mappings)
  std::optional<std::string> dataset;   ///< a YAML file holding such a list (paths relative to it)
  std::optional<int> charge;   ///< overrides the molecule files' charge (every molecule)
  std::optional<int> spin;     ///< overrides the molecule files' spin (n_up − n_down, every molecule)
  template <class V> void visit(V& v) {
    v("molecule", molecule, "name in configs/molecules/, path to .yaml/.xyz, inline atoms, or an entry as in system.molecules, e.g. {molecule: h, charge: -1} (default: lih)");
    v("molecules", molecules,
      "several molecules: [name | path | {molecule: name-or-path, geometry: [[x, y, z], ...], units, name, "
      "charge, spin} | {atoms: [...], units, name, charge, spin}, ...]");
    v("dataset", dataset, "YAML file with a list of molecules in the form of system.molecules (or a map whose only key, molecules, holds that list)");
    v("charge", charge, "total charge of every molecule (default: from the molecule files)");
    v("spin", spin, "n_up - n_down of every molecule (default: from the molecule files)");
  }
};

/// FermiNet hyper-parameters. Unset sizes (FermiNet itself and the resolved config fill them in)
/// follow the molecule's electron count N (see
/// sized_for): width w = clamp(16N, 32, 256), two-electron width clamp(w/4, 8, 32), 3 layers below
/// 10 electrons and 4 from 10 on, K = clamp(2N, 4, 16) determinants — He [[32, 8]]×3 with 4
/// determinants, LiH [[64, 16]]×3 with 8, ≥ 16 electrons the published [[256, 32]]×4 with 16
/// (Pfau et al. 2020).
struct FermiNetOptions {
  std::optional<std::vector<std::array<int, 2>>> hidden_dims;  ///< [one-electron, two-electron] width per layer; unset: by size
  std::optional<int> determinants;                            ///< K in Σ_k det[φ^k]; unset: by size
  std::string envelope = "isotropic";                         ///< orbital envelope: isotropic
  template <class V> void visit(V& v) {
    v("hidden_dims", hidden_dims, "[one-electron, two-electron] width per layer (unset: from the electron count)");
    v("determinants", determinants, "number of determinants K (unset: from the electron count)");
    v("envelope", envelope, "orbital envelope: isotropic");
  }
  /// These options with unset sizes filled in for a molecule of `n_electrons` (rule above).
  FermiNetOptions sized_for(int n_electrons) const;
};

/// Orbformer hyper-parameters; defaults follow oneqmc's published OrbformerSE
/// (Foster et al. 2025, checkpoints/lac: 3,032,938 parameters for elements H–F).
struct OrbformerOptions {
  std::string elements = "H-F";     ///< supported elements: H up to this one (per-element embeddings)
  int heads = 8;                    ///< attention heads of the electron transformer
  int head_dim = 32;                ///< features per head; electron feature width = heads·head_dim
  int layers = 4;                   ///< electron transformer blocks
  int featurization_heads = 16;     ///< heads of the electron–nucleus featurisation (divide the width)
  bool edge_features = true;        ///< electron–electron distance bias in the attention logits
  int determinants = 16;            ///< K, combined by log-sum-exp
  int envelopes_per_nucleus = 8;    ///< exponentials per nucleus in the envelopes
  int nuclear_feature_dim = 64;     ///< width of the nuclear GNN's features
  int nuclear_layers = 3;           ///< message-passing blocks of the nuclear GNN
  int nuclear_heads = 2;            ///< message heads of the nuclear GNN
  int orbital_layers = 3;           ///< message-passing blocks of the orbital generator
  int orbital_heads = 4;            ///< message heads of the orbital generator
  int orbital_head_dim = 32;        ///< features per orbital-generator head
  /// Atomic number of the heaviest supported element (the part of `elements` after "H-").
  /// @throws ConfigError naming model.orbformer.elements
  int max_atomic_number() const;
  template <class V> void visit(V& v) {
    v("elements", elements, "supported elements H-X (H up to X; oneqmc's max_species)");
    v("heads", heads, "attention heads of the electron transformer");
    v("head_dim", head_dim, "features per attention head");
    v("layers", layers, "electron transformer blocks");
    v("featurization_heads", featurization_heads, "heads of the electron-nucleus featurisation");
    v("edge_features", edge_features, "electron-electron distance bias in the attention");
    v("determinants", determinants, "number of determinants K");
    v("envelopes_per_nucleus", envelopes_per_nucleus, "exponential envelopes per nucleus");
    v("nuclear_feature_dim", nuclear_feature_dim, "nuclear feature width");
    v("nuclear_layers", nuclear_layers, "message-passing blocks of the nuclear GNN");
    v("nuclear_heads", nuclear_heads, "message heads of the nuclear GNN");
    v("orbital_layers", orbital_layers, "message-passing blocks of the orbital generator");
    v("orbital_heads", orbital_heads, "message heads of the orbital generator");
    v("orbital_head_dim", orbital_head_dim, "features per orbital-generator head");
  }
};

/// Psiformer hyper-parameters; defaults follow von Glehn, Spencer, Pfau (ICLR 2023) and
/// FermiNet's psiformer.py (its base_config `psiformer` block).
struct PsiformerOptions {
  int layers = 4;                        ///< self-attention layers
  int heads = 4;                         ///< attention heads per layer
  int head_dim = 64;                     ///< width per head; the stream is heads·head_dim wide
  std::vector<int> mlp_hidden_dims{256};  ///< hidden widths of each layer's tanh MLP (before its tanh projection back to the stream width)
  int determinants = 16;                 ///< K full N×N determinants
  bool layer_norm = true;                ///< LayerNorm (learnable scale, offset) after both residuals
  std::string jastrow = "simple_ee";     ///< simple_ee (electron–electron cusps) | none
  std::string envelope = "isotropic";    ///< orbital envelope: isotropic
  template <class V> void visit(V& v) {
    v("layers", layers, "number of self-attention layers");
    v("heads", heads, "attention heads per layer");
    v("head_dim", head_dim, "width of each head (stream width = heads * head_dim)");
    v("mlp_hidden_dims", mlp_hidden_dims, "hidden widths of each layer's tanh MLP");
    v("determinants", determinants, "number of full determinants K");
    v("layer_norm", layer_norm, "LayerNorm after the attention and MLP residuals");
    v("jastrow", jastrow, "Jastrow factor: simple_ee | none");
    v("envelope", envelope, "orbital envelope: isotropic");
  }
};

/// The bare Hartree–Fock determinant (no network parameters).
struct HartreeFockOptions {
  std::string basis = "sto-6g";  ///< Gaussian basis of the UHF orbitals
  template <class V> void visit(V& v) { v("basis", basis, "basis set (data/basis/)"); }
};

/// PauliNet hyper-parameters; defaults follow Hermann, Schätzle, Noé, Nat. Chem. 12, 891 (2020)
/// as implemented in DeepQMC 0.3 (SchNet version 2, orbital-type multiplicative backflow).
struct PaulinetOptions {
  std::string basis = "6-311g";   ///< Gaussian basis of the Hartree–Fock baseline orbitals
  bool unrestricted = false;      ///< UHF orbitals (open-shell molecules always use UHF)
  bool freeze_baseline = true;    ///< MO coefficients fixed (false: trained as parameters)
  bool cusp_correction = true;    ///< nuclear cusp correction of the Gaussian orbitals
  double rc_scaling = 1.0;        ///< correction radius r_c = rc_scaling / Z (bohr)
  bool cusp_shifts = true;        ///< train the relative shift of each corrected orbital at its nucleus
  bool cusp_electrons = true;     ///< analytic electron–electron cusp factor exp(γ)
  double cusp_alpha = 10.0;       ///< α of γ = Σ_{i<j} −c_ij / (α (1 + α r_ij))
  bool jastrow = true;            ///< learned Jastrow factor J (false: J = 0)
  bool backflow = true;           ///< learned multiplicative backflow (false: f = 1)
  int interactions = 3;           ///< message-passing rounds of the graph network
  int embedding_dim = 128;        ///< electron embedding width
  int kernel_dim = 64;            ///< convolution kernel width
  int distance_features = 32;     ///< Gaussian distance features per edge
  double cutoff = 10.0;           ///< distance-feature cutoff (bohr)
  int jastrow_layers = 3;         ///< layers of the Jastrow MLP
  int backflow_layers = 3;        ///< layers of the backflow MLP
  template <class V> void visit(V& v) {
    v("basis", basis, "basis set of the HF baseline (data/basis/)");
    v("unrestricted", unrestricted, "UHF baseline orbitals (open shells always use UHF)");
    v("freeze_baseline", freeze_baseline, "keep the HF MO coefficients fixed");
    v("cusp_correction", cusp_correction, "nuclear cusp correction of the Gaussian orbitals");
    v("rc_scaling", rc_scaling, "cusp-correction radius r_c = rc_scaling / Z (bohr)");
    v("cusp_shifts", cusp_shifts, "train the value shift of each cusp-corrected orbital at its nucleus");
    v("cusp_electrons", cusp_electrons, "analytic electron-electron cusp factor");
    v("cusp_alpha", cusp_alpha, "alpha of the electron-electron cusp factor");
    v("jastrow", jastrow, "learned Jastrow factor");
    v("backflow", backflow, "learned multiplicative orbital backflow");
    v("interactions", interactions, "message-passing rounds of the graph network");
    v("embedding_dim", embedding_dim, "electron embedding width");
    v("kernel_dim", kernel_dim, "convolution kernel width");
    v("distance_features", distance_features, "Gaussian distance features per edge");
    v("cutoff", cutoff, "distance-feature cutoff (bohr)");
    v("jastrow_layers", jastrow_layers, "layers of the Jastrow MLP");
    v("backflow_layers", backflow_layers, "layers of the backflow MLP");
  }
};

/// `model:` — ansatz type and per-type options under the type's name.
struct ModelConfig {
  std::string type = "ferminet";  ///< registry key of the ansatz
  std::string init_from;          ///< checkpoint or run directory whose parameters start a new run (fine-tuning); empty: none
  FermiNetOptions ferminet;       ///< options when type == ferminet
  OrbformerOptions orbformer;     ///< options when type == orbformer
  PsiformerOptions psiformer;     ///< options when type == psiformer
  HartreeFockOptions hf;          ///< options when type == hf
  PaulinetOptions paulinet;       ///< options when type == paulinet
  template <class V> void visit(V& v) {
    v("type", type, "ansatz: ferminet | psiformer | paulinet | orbformer | hf");
    v("init_from", init_from,
      "checkpoint (or a run's output directory) whose parameters start this run (fine-tuning; optimizer and walkers "
      "start fresh)");
    v("ferminet", ferminet, "FermiNet options");
    v("psiformer", psiformer, "Psiformer options");
    v("orbformer", orbformer, "Orbformer options");
    v("hf", hf, "Hartree-Fock determinant options");
    v("paulinet", paulinet, "PauliNet options");
  }
};

/// `sampler:` — Metropolis–Hastings with all-electron Gaussian moves.
struct SamplerOptions {
  int walkers = 1024;              ///< number of independent chains B
  int steps_per_iteration = 10;    ///< MH steps between optimisation/measurement steps
  int burn_in = 100;               ///< MH steps before the first iteration
  /// Initial Gaussian move width (bohr); adapted toward target_acceptance during burn-in and
  /// training (frozen while an evaluation measures).
  double step_size = 0.2;
  double target_acceptance = 0.5;  ///< step size is adapted toward this acceptance
  template <class V> void visit(V& v) {
    v("walkers", walkers, "number of walkers (chains)");
    v("steps_per_iteration", steps_per_iteration, "MH steps per iteration");
    v("burn_in", burn_in, "MH steps before the first iteration");
    v("step_size", step_size, "initial Gaussian move width (bohr)");
    v("target_acceptance", target_acceptance, "acceptance the step size is adapted to");
  }
};

/// `hamiltonian.hutchinson:` — stochastic trace estimator options.
struct HutchinsonOptions {
  int probes = 1;                          ///< probe vectors per walker and evaluation
  std::string distribution = "rademacher";  ///< rademacher | gaussian
  template <class V> void visit(V& v) {
    v("probes", probes, "probe vectors per walker");
    v("distribution", distribution, "rademacher | gaussian");
  }
};

/// `hamiltonian:` — how the local energy is computed.
struct HamiltonianOptions {
  std::string laplacian = "forward";  ///< forward (exact, one pass, fastest) | jvp | reverse | hutchinson
  HutchinsonOptions hutchinson;   ///< options of the hutchinson method
  int chunk_walkers = 0;          ///< walkers per chunk; 0 = sized by run.memory_budget
  template <class V> void visit(V& v) {
    v("laplacian", laplacian, "Laplacian method: forward (fastest exact) | jvp | reverse | hutchinson");
    v("hutchinson", hutchinson, "Hutchinson estimator options");
    v("chunk_walkers", chunk_walkers, "walkers per local-energy chunk (0: from memory budget)");
  }
};

/// `optim.sr:` — stochastic-reconfiguration family (sr, minsr, spring): the update δ solves
/// (S + λ)δ = Ōᵀε with S = ŌᵀŌ, Ō the centred per-walker ∇θ log|ψ| / √B, ε the centred
/// clipped local energies / √B; θ ← θ − lr(t)·δ.
struct SrOptions {
  double damping = 1e-3;          ///< λ added to the diagonal of S (sr) or of ŌŌᵀ (minsr, spring)
  double norm_constraint = 1e-2;  ///< bound C on the squared size of a step (see `norm`); 0: none
  std::string norm = "euclidean";  ///< euclidean: lr²·|δ|² ≤ C (SPRING paper); fisher: lr²·|Ōδ|² ≤ C
  int chunk_walkers = 0;          ///< walkers per forward+backward pass of the per-walker gradients
                                  ///< (0: all; fewer when run.memory_budget requires it)
  template <class V> void visit(V& v) {
    v("damping", damping, "diagonal shift of S (sr) or of the sample-space kernel (minsr, spring)");
    v("norm_constraint", norm_constraint, "max squared step size, measured by `norm` (0: no constraint)");
    v("norm", norm, "step size measure of the constraint: fisher (lr^2 |O delta|^2) | euclidean (lr^2 |delta|^2)");
    v("chunk_walkers", chunk_walkers, "walkers per pass of the per-walker gradients (0: all that fit run.memory_budget)");
  }
};

/// `optim.spring:` — SPRING (Goldshlager et al. 2024): minSR with momentum on the previous update.
struct SpringOptions {
  double momentum = 0.99;  ///< μ: weight of the previous update δ_{t−1}
  template <class V> void visit(V& v) { v("momentum", momentum, "mu, weight of the previous update"); }
};

/// `optim.kfac:` — K-FAC (Martens & Grosse 2015) with the settings DeepQMC and FermiNet use
/// through kfac-jax: Kronecker factors of each linear layer's inputs and output gradients of
/// log|ψ| (moving averages), a diagonal block for every other parameter, factored damping and
/// the norm constraint lr²·δᵀg ≤ C (train/kfac.hpp).
struct KfacOptions {
  double damping = 1e-3;          ///< λ added to the curvature (factored between the two factors of a layer)
  double norm_constraint = 1e-3;  ///< C in lr²·δᵀg ≤ C (g the gradient, δ the update); 0: none
  double cov_ema_decay = 0.95;    ///< ρ: weight of the previous factors in their moving averages
  template <class V> void visit(V& v) {
    v("damping", damping, "curvature damping lambda");
    v("norm_constraint", norm_constraint, "bound on lr^2 * <update, gradient> (0: none)");
    v("cov_ema_decay", cov_ema_decay, "decay of the factors' moving averages");
  }
};

/// `optim:` — optimiser and gradient estimator.
struct OptimOptions {
  std::string type = "adam";  ///< adam | sr | minsr | spring | kfac
  double lr = 3e-3;           ///< base learning rate, lr / (1 + t / lr_delay); unset: 3e-3 (adam), 0.1 (sr, minsr, spring), 0.05 (kfac)
  double lr_delay = 1000;     ///< iterations until the learning rate has halved; unset: 1000, kKfacLrDelay (kfac)
  int iterations = 1000;      ///< optimisation iterations
  double minutes = 0;         ///< training wall time, summed over resumes (0: no limit); training ends at whichever of iterations and minutes comes first
  double clip_width = 5.0;    ///< E_L clipped to median ± clip_width·MAD for the gradient (0: not clipped)
  double beta1 = 0.9;         ///< Adam first-moment decay
  double beta2 = 0.999;       ///< Adam second-moment decay
  double epsilon = 1e-8;      ///< Adam denominator offset
  SrOptions sr;               ///< options of sr, minsr and spring
  SpringOptions spring;       ///< extra options of spring
  KfacOptions kfac;           ///< options of kfac
  int log_every = 10;         ///< one progress line every this many iterations
  int max_consecutive_failures = 10;  ///< failed (non-finite) steps in a row before training stops
  int molecules_per_step = 0;  ///< molecules trained per iteration, drawn from run.seed and t; 0: all
  /// Weight of oneqmc's determinant-balance penalty (ansätze with determinant weights: orbformer);
  /// unset: kDeterminantBalanceDefault for adam, 0 for sr, minsr, spring, kfac (as oneqmc, whose SPRING
  /// does not use it); 0 disables it.
  std::optional<double> determinant_balance;
  template <class V> void visit(V& v) {
    v("type", type, "optimizer: adam | sr | minsr | spring | kfac");
    v("lr", lr, "learning rate (default 3e-3 for adam, 0.1 for sr, minsr, spring, 0.05 for kfac)");
    v("lr_delay", lr_delay, "lr(t) = lr / (1 + t / lr_delay) (default 1000, 10000 for kfac)");
    v("iterations", iterations, "training iterations");
    v("minutes", minutes,
      "training wall time in minutes, summed over resumes (0: no limit); training ends at whichever of "
      "iterations and minutes comes first");
    v("clip_width", clip_width,
      "local energies enter the gradient clipped to the median +- this many mean absolute deviations from it "
      "(0: not clipped, as FermiNet's clip_local_energy 0)");
    v("beta1", beta1, "Adam beta1");
    v("beta2", beta2, "Adam beta2");
    v("epsilon", epsilon, "Adam epsilon");
    v("sr", sr, "stochastic reconfiguration options (sr, minsr, spring)");
    v("spring", spring, "SPRING options");
    v("kfac", kfac, "K-FAC options");
    v("log_every", log_every, "progress line every N iterations");
    v("max_consecutive_failures", max_consecutive_failures,
      "failed (non-finite) steps in a row, each retried with new moves, before training stops");
    v("molecules_per_step", molecules_per_step, "molecules trained per iteration (0: all of system.molecules)");
    v("determinant_balance", determinant_balance,
      "weight of the determinant-balance penalty (orbformer; default 1e-3 for adam, 0 for sr/minsr/spring/kfac)");
  }
};

/// `pretrain:` — Hartree–Fock pretraining of the orbitals.
struct PretrainOptions {
  /// Pretraining iterations (0: none). Unset in the YAML: kPretrainSteps for ansätze whose
  /// orbitals are learned from scratch (ferminet, psiformer, orbformer), 0 otherwise (paulinet's
  /// Hartree-Fock baseline is built in, hf has no parameters) and with model.init_from.
  int steps = 0;
  std::string basis = "sto-6g";  ///< basis of the UHF target orbitals
  double lr = 3e-3;             ///< pretraining learning rate (Adam)
  template <class V> void visit(V& v) {
    v("steps", steps, "HF pretraining iterations (0: none; default by model.type, 0 with model.init_from)");
    v("basis", basis, "basis set of the HF target");
    v("lr", lr, "pretraining learning rate");
  }
};

/// `eval:` — evaluation with fixed parameters (after training and in `nnvmc eval`).
struct EvalOptions {
  int steps = 500;   ///< measurement iterations (each steps_per_iteration MH steps apart)
  int burn_in = 50;  ///< MH steps before measuring
  template <class V> void visit(V& v) {
    v("steps", steps, "measurement iterations (each sampler.steps_per_iteration MH steps apart) of the final "
                      "evaluation after training (0: none, and no summary.json; nnvmc eval DIR measures later)");
    v("burn_in", burn_in, "MH steps before measuring");
  }
};

/// `run:` — seeds, precision, device, output and checkpointing.
struct RunOptions {
  std::string name;                        ///< run name (default: config file stem)
  std::uint64_t seed = 0;                  ///< RNG seed
  std::string dtype = "float64";           ///< float64 | float32
  std::string device = "cpu";              ///< cpu | cuda | cuda:N
  std::string output = "runs/<name>";      ///< output directory; <name> is replaced
  int checkpoint_every = 500;              ///< iterations between checkpoints (0: only at the end)
  std::string memory_budget = "auto";      ///< bytes or e.g. "2GiB"; auto = fraction of free memory
  int threads = 0;                         ///< intra-op threads (0: all cores)
  bool walker_threads = true;              ///< on the CPU, walkers split into one part per thread
  bool cuda_graphs = false;                ///< on CUDA, MH steps and local energies replay captured graphs
  bool overwrite = false;                  ///< a new run may replace a run already in `output`
  template <class V> void visit(V& v) {
    v("name", name, "run name (default: config file name; without one, MOLECULE_MODEL, e.g. h2_ferminet)");
    v("seed", seed, "random seed (0 to 2^64 - 1; fixed once a run has started: a resume refuses another)");
    v("dtype", dtype, "float64 | float32");
    v("device", device, "cpu | cuda | cuda:N");
    v("output", output, "output directory (<name> is replaced)");
    v("checkpoint_every", checkpoint_every, "iterations between checkpoints (0: only at the end)");
    v("memory_budget", memory_budget,
      "working memory of every pass over the walkers (local energies, the sampler's log|psi|, the gradient and "
      "per-walker gradients (optim.sr.chunk_walkers), HF pretraining): bytes (e.g. 2GiB, 500MB) or auto (60 % of "
      "the available memory, less the training's and the walkers' own state)");
    v("threads", threads, "CPU threads (0: all cores)");
    v("walker_threads", walker_threads,
      "on the CPU, run the wavefunction and local energy on one part of the walkers per thread "
      "(false: libtorch's intra-op threads only)");
    v("cuda_graphs", cuda_graphs,
      "on a CUDA device, capture the MH step (proposal, log|psi|, acceptance) and the local energy "
      "(forward and reverse Laplacians) in CUDA graphs and replay them (falls back to launching the "
      "kernels if capture fails; no effect on the CPU)");
    v("overwrite", overwrite, "start over in an output directory that holds a run (nnvmc train --force)");
  }
};

/// optim.lr when it is not given and optim.type is sr, minsr or spring (the shipped SPRING setting,
/// with the Euclidean step bound optim.sr.norm_constraint = 0.01, i.e. |lr·δ| ≤ 0.1).
constexpr double kNaturalGradientLr = 0.1;
/// optim.lr when it is not given and optim.type is kfac (DeepQMC's K-FAC preset).
constexpr double kKfacLr = 0.05;
/// optim.lr_delay when it is not given and optim.type is kfac: FermiNet's and DeepQMC's K-FAC
/// schedule 0.05 / (1 + t / 10000) (it was 1000, which decayed the rate ten times sooner).
constexpr double kKfacLrDelay = 10000;

/// pretrain.steps when it is not given and model.type is ferminet, psiformer or orbformer
/// (without model.init_from): FermiNet's own default (pretrain.iterations 1000). It was 300: a
/// user audit found LiH's FermiNet, pretrained only, 345 mEh above its STO-6G target after 300
/// steps and 51 mEh after 1000 (its envelopes' exponents rise slowly towards Li 1s).
constexpr int kPretrainSteps = 1000;

/// optim.determinant_balance when it is not given and optim.type is adam (oneqmc's
/// det_penalty_weight of the published Orbformer runs).
constexpr double kDeterminantBalanceDefault = 1e-3;

/// The whole configuration of a run.
struct Config {
  SystemConfig system;
  ModelConfig model;
  SamplerOptions sampler;
  HamiltonianOptions hamiltonian;
  OptimOptions optim;
  PretrainOptions pretrain;
  EvalOptions eval;
  RunOptions run;
  template <class V> void visit(V& v) {
    v("system", system, "molecule, charge, spin");
    v("model", model, "ansatz");
    v("sampler", sampler, "Metropolis-Hastings sampler");
    v("hamiltonian", hamiltonian, "local energy");
    v("optim", optim, "optimizer");
    v("pretrain", pretrain, "Hartree-Fock pretraining");
    v("eval", eval, "evaluation");
    v("run", run, "run settings");
  }
};

/// Reads a config: YAML text (file contents) plus `key.path=value` overrides.
/// `where` names the source in errors. Checks unknown keys, types and ranges. Keys that are not
/// given take their defaults, except optim.lr, which defaults by optim.type (kNaturalGradientLr
/// for sr, minsr and spring, kKfacLr for kfac), optim.lr_delay (kKfacLrDelay for kfac), and pretrain.steps, which defaults by model.type
/// (kPretrainSteps for ferminet, psiformer and orbformer without model.init_from, else 0).
/// @throws ConfigError naming the key path (and file line when known).
Config parse_config(const std::string& yaml_text, const std::vector<std::string>& overrides,
                    const std::string& where);

/// Loads a config file (see parse_config). Sets run.name from the file stem if empty.
/// @throws ConfigError for a file that is empty (or only comments) when no overrides are given.
Config load_config(const std::string& path, const std::vector<std::string>& overrides = {});

/// A config from `key.path=value` overrides alone (`nnvmc train system.molecule=h2`): the
/// defaults plus the overrides. Sets run.name, when not given, to MOLECULE_MODEL (h2_ferminet;
/// lih_ferminet without a molecule, the file's stem for a file, h2_charge+1_ferminet with
/// system.charge), or to the model type for inline atoms or a list of molecules.
/// @throws ConfigError when `overrides` is empty (the default LiH was never asked for)
Config config_from_overrides(const std::vector<std::string>& overrides);

/// Whether the override `assignment` (key.path=value) sets the key `key_path`, directly
/// (`sampler.step_size=0.3`) or inside a mapping (`sampler={step_size: 0.3}`). A malformed
/// override sets nothing (parse_config reports it).
bool override_sets(const std::string& assignment, const std::string& key_path);

/// The fully resolved config as YAML (with a comment per field).
std::string to_yaml(const Config& config);

/// `config` as a run records it (config.yaml, checkpoints): the default molecule named
/// (system.molecule: lih when no molecule key is given) and the FermiNet sizes left to the
/// molecule filled in for `n_electrons`, the first molecule's (FermiNetOptions::sized_for).
Config as_recorded(const Config& config, int n_electrons);

/// Range checks (walkers > 0, known enum strings, ...). @throws ConfigError.
void validate(const Config& config);

/// A run that trains (optim.iterations > 0) needs at least 2 walkers: the energy gradient is a
/// covariance over them. (An evaluation may use one, so validate() leaves this out.)
/// @throws ConfigError naming sampler.walkers
void require_walkers_to_train(const Config& config);

/// Parses a byte count: a number or a number with B/KB/MB/GB/KiB/MiB/GiB. @throws ConfigError.
std::uint64_t parse_bytes(const std::string& text, const std::string& key);

/// Whether `text` names an execution device: cpu | cuda | cuda:N.
bool is_device_name(const std::string& text);

}  // namespace nnvmc
