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

/// `system:` — which molecule, with optional charge/spin overriding the molecule file.
struct SystemConfig {
  InlineYaml molecule{"lih"};  ///< a name in configs/molecules/, a .yaml/.xyz path, or inline atoms
  std::optional<int> charge;   ///< overrides the molecule file's charge
  std::optional<int> spin;     ///< overrides the molecule file's spin (n_up − n_down)
  template <class V> void visit(V& v) {
    v("molecule", molecule, "name in configs/molecules/, path to .yaml/.xyz, or inline atoms");
    v("charge", charge, "total charge (default: from the molecule file)");
    v("spin", spin, "n_up - n_down (default: from the molecule file)");
  }
};

/// FermiNet hyper-parameters; defaults follow Pfau et al. (2020).
struct FermiNetOptions {
  std::vector<std::array<int, 2>> hidden_dims{4, {256, 32}};  ///< [one-electron, two-electron] width per layer
  int determinants = 16;                                      ///< K in Σ_k det[φ^k]
  std::string envelope = "isotropic";                         ///< orbital envelope: isotropic
  template <class V> void visit(V& v) {
    v("hidden_dims", hidden_dims, "[one-electron, two-electron] width per layer");
    v("determinants", determinants, "number of determinants K");
    v("envelope", envelope, "orbital envelope: isotropic");
  }
};

/// The bare Hartree–Fock determinant (no network parameters).
struct HartreeFockOptions {
  std::string basis = "sto-6g";  ///< Gaussian basis of the UHF orbitals
  template <class V> void visit(V& v) { v("basis", basis, "basis set (data/basis/)"); }
};

/// `model:` — ansatz type and per-type options under the type's name.
struct ModelConfig {
  std::string type = "ferminet";  ///< registry key of the ansatz
  FermiNetOptions ferminet;       ///< options when type == ferminet
  HartreeFockOptions hf;          ///< options when type == hf
  template <class V> void visit(V& v) {
    v("type", type, "ansatz: ferminet | hf");
    v("ferminet", ferminet, "FermiNet options");
    v("hf", hf, "Hartree-Fock determinant options");
  }
};

/// `sampler:` — Metropolis–Hastings with all-electron Gaussian moves.
struct SamplerOptions {
  int walkers = 1024;              ///< number of independent chains B
  int steps_per_iteration = 10;    ///< MH steps between optimisation/measurement steps
  int burn_in = 100;               ///< MH steps before the first iteration
  double step_size = 0.02;         ///< initial Gaussian move width (bohr)
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
  std::string laplacian = "jvp";  ///< jvp | reverse | hutchinson | forward
  HutchinsonOptions hutchinson;   ///< options of the hutchinson method
  int chunk_walkers = 0;          ///< walkers per chunk; 0 = sized by run.memory_budget
  template <class V> void visit(V& v) {
    v("laplacian", laplacian, "Laplacian method: jvp | reverse | hutchinson | forward");
    v("hutchinson", hutchinson, "Hutchinson estimator options");
    v("chunk_walkers", chunk_walkers, "walkers per local-energy chunk (0: from memory budget)");
  }
};

/// `optim.sr:` — stochastic-reconfiguration family (sr, minsr, spring): the update δ solves
/// (S + λ)δ = Ōᵀε with S = ŌᵀŌ, Ō the centred per-walker ∇θ log|ψ| / √B, ε the centred
/// clipped local energies / √B; θ ← θ − lr(t)·δ.
struct SrOptions {
  double damping = 1e-3;          ///< λ added to the diagonal of S (sr) or of ŌŌᵀ (minsr, spring)
  double norm_constraint = 1e-3;  ///< bound on the squared size of a step (see `norm`); 0: none
  std::string norm = "fisher";    ///< fisher: lr²·|Ōδ|² ≤ C; euclidean: lr²·|δ|² ≤ C (SPRING paper)
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
  double lr = 3e-3;           ///< base learning rate; schedule lr / (1 + t / lr_delay)
  double lr_delay = 1000;     ///< iterations until the learning rate has halved
  int iterations = 1000;      ///< optimisation iterations
  double clip_width = 5.0;    ///< E_L clipped to median ± clip_width·MAD for the gradient
  double beta1 = 0.9;         ///< Adam first-moment decay
  double beta2 = 0.999;       ///< Adam second-moment decay
  double epsilon = 1e-8;      ///< Adam denominator offset
  SrOptions sr;               ///< options of sr, minsr and spring
  SpringOptions spring;       ///< extra options of spring
  KfacOptions kfac;           ///< options of kfac
  int log_every = 10;         ///< one progress line every this many iterations
  template <class V> void visit(V& v) {
    v("type", type, "optimizer: adam | sr | minsr | spring | kfac");
    v("lr", lr, "learning rate");
    v("lr_delay", lr_delay, "lr(t) = lr / (1 + t / lr_delay)");
    v("iterations", iterations, "training iterations");
    v("clip_width", clip_width, "local-energy clipping width (in mean absolute deviations)");
    v("beta1", beta1, "Adam beta1");
    v("beta2", beta2, "Adam beta2");
    v("epsilon", epsilon, "Adam epsilon");
    v("sr", sr, "stochastic reconfiguration options (sr, minsr, spring)");
    v("spring", spring, "SPRING options");
    v("kfac", kfac, "K-FAC options");
    v("log_every", log_every, "progress line every N iterations");
  }
};

/// `pretrain:` — Hartree–Fock pretraining of the orbitals.
struct PretrainOptions {
  int steps = 0;                ///< pretraining iterations (0: none)
  std::string basis = "sto-6g";  ///< basis of the UHF target orbitals
  double lr = 3e-4;             ///< pretraining learning rate
  template <class V> void visit(V& v) {
    v("steps", steps, "HF pretraining iterations (0: none)");
    v("basis", basis, "basis set of the HF target");
    v("lr", lr, "pretraining learning rate");
  }
};

/// `eval:` — evaluation with fixed parameters (after training and in `nnvmc eval`).
struct EvalOptions {
  int steps = 500;   ///< measurement iterations (each steps_per_iteration MH steps apart)
  int burn_in = 50;  ///< MH steps before measuring
  template <class V> void visit(V& v) {
    v("steps", steps, "measurement iterations");
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
  template <class V> void visit(V& v) {
    v("name", name, "run name (default: config file name)");
    v("seed", seed, "random seed");
    v("dtype", dtype, "float64 | float32");
    v("device", device, "cpu | cuda | cuda:N");
    v("output", output, "output directory (<name> is replaced)");
    v("checkpoint_every", checkpoint_every, "iterations between checkpoints");
    v("memory_budget", memory_budget, "bytes, e.g. 2GiB, or auto");
    v("threads", threads, "CPU threads (0: all cores)");
  }
};

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
/// `where` names the source in errors. Checks unknown keys, types and ranges.
/// @throws ConfigError naming the key path (and file line when known).
Config parse_config(const std::string& yaml_text, const std::vector<std::string>& overrides,
                    const std::string& where);

/// Loads a config file (see parse_config). Sets run.name from the file stem if empty.
Config load_config(const std::string& path, const std::vector<std::string>& overrides = {});

/// The fully resolved config as YAML (with a comment per field).
std::string to_yaml(const Config& config);

/// Range checks (walkers > 0, known enum strings, ...). @throws ConfigError.
void validate(const Config& config);

/// Parses a byte count: a number or a number with B/KB/MB/GB/KiB/MiB/GiB. @throws ConfigError.
std::uint64_t parse_bytes(const std::string& text, const std::string& key);

}  // namespace nnvmc
