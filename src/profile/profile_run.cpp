#include "profile/profile.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>


#include "core/errors.hpp"
#include "core/host_memory.hpp"
#include "core/log.hpp"
#include "core/process.hpp"
#include "io/created_directories.hpp"
#include "io/directory_lock.hpp"
#include "io/output_kind.hpp"
#include "train/stop_request.hpp"
#include "core/molecule_list.hpp"
#include "models/model_traits.hpp"
#include "models/registry.hpp"
#include "profile/stage_recorder.hpp"
#include "train/molecule_batches.hpp"
#include "train/setup.hpp"
#include "train/trainer.hpp"

namespace nnvmc::profile {

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int cuda_index(const std::string& device) {
  if (device == "cpu") return -1;
  const auto colon = device.find(':');
  return colon == std::string::npos ? 0 : std::stoi(device.substr(colon + 1));
}

void profiler_stop(OpProfiler& profiler, StageRecorder& recorder, std::vector<std::map<std::string, StageOps>>& out) {
  recorder.set_ranges(false);
  out.push_back(profiler.stop());
}

/// A scratch run directory's marker file: a run directory under <output>/runs/ without it is
/// a user's run, which profile never replaces.
constexpr const char* kScratchMarker = io::kProfileScratchMarker;


/// Name of a run directory under <output>/runs/: the molecule's name (a frame's STEM@K as
/// STEM_K; `batch` for several molecules), with characters other than letters, digits, - and _
/// replaced by _.
std::string run_label(const std::vector<System>& systems) {
  std::string label = systems.size() == 1 ? systems.front().name : "batch";
  if (label.empty()) label = "molecule";
  for (auto& c : label)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
  return label;
}

/// Row label of a run's molecules: the name of its one molecule, or of a batch ("a, b, c" up to
/// four, else "a, b, c, … (N molecules)").
std::string batch_label(const VmcSetup& setup) {
  const std::size_t n = setup.molecules.size();
  std::string label;
  for (std::size_t i = 0; i < n && i < (n <= 4 ? n : 3); ++i) label.append(i ? ", " : "").append(setup.molecules[i].name());
  if (n > 4) label.append(", … (").append(std::to_string(n)).append(" molecules)");
  return label;
}

/// Every molecule resolves (name, file, charge/spin) and each has its own run directory,
/// before anything is profiled or written. @return the run directory's name of each entry of
/// `molecules` (different molecules of one name, e.g. two inline ones, numbered: h2, h2_2)
/// @throws InputError naming the molecule
std::vector<std::string> check_molecules(const std::string& config_path, const std::vector<std::string>& overrides,
                                         const std::vector<std::string>& molecules) {
  std::vector<std::string> labels;
  std::set<std::string> entries, taken;
  for (const auto& mol : molecules) {
    if (!entries.insert(mol).second) throw InputError("profile: --molecules lists '" + mol + "' twice");
    std::vector<std::string> with = overrides;
    if (!mol.empty()) with.push_back("system.molecule=" + mol);
    const Config config = load_config(config_path, with);
    if (!ansatz_is_trainable(config.model.type))
      throw ConfigError("profile: the '" + config.model.type + "' ansatz has no parameters: profile times training "
                        "iterations (evaluate it with 'nnvmc eval', or compare it with 'nnvmc compare')");
    std::vector<System> systems;
    try {
      systems = resolve_molecules(config.system);
      // The ansatz is built for each molecule too, so one it cannot describe (elements, basis)
      // is refused before the first is profiled and anything is written.
      for (const System& system : systems) {
        ModelConfig model = config.model;
        model.ferminet = config.model.ferminet.sized_for(system.n_electrons());
        (void)build_model(model, system, torch::TensorOptions());  // (as built: no copy)
      }
    } catch (const InputError& e) {
      throw InputError("profile: --molecules " + (mol.empty() ? std::string("(the config's)") : mol) + ": " + e.what());
    }
    const std::string base = run_label(systems);
    std::string label = base;
    for (int k = 2; !taken.insert(label).second; ++k) label = base + "_" + std::to_string(k);
    labels.push_back(label);
  }
  return labels;
}

MoleculeProfile profile_molecule(const std::string& config_path, std::vector<std::string> overrides,
                                 const std::string& molecule, const std::string& label, const ProfileOptions& o,
                                 ProfileReport& report) {
  if (!molecule.empty()) overrides.push_back("system.molecule=" + molecule);
  // Each molecule's chunks are calibrated the first time it is trained: with a batch of fewer
  // than all molecules per iteration (optim.molecules_per_step), the warm-up lasts until every
  // one has been (the batches are a function of the seed and the iteration).
  int warmup = o.warmup;
  {
    const Config c = load_config(config_path, overrides);
    const std::size_t n = resolve_molecules(c.system).size();
    std::set<std::size_t> seen;
    for (int t = 0; seen.size() < n; ++t) {
      for (std::size_t i : molecules_for_iteration(n, c.optim.molecules_per_step, c.run.seed, t)) seen.insert(i);
      warmup = std::max(warmup, t + 1);
    }
  }
  const int total = warmup + o.iterations + o.profiled;
  // The previous profile's scratch run of this name (checked: marked as such) goes first, so
  // the new one starts as a fresh run, not as a --force start over it.
  const std::string dir = o.output + "/runs/" + label;
  std::error_code ec;
  // (a scratch run continued with train --resume keeps the mark until its first checkpoint:
  // one in use is the user's; a review)
  if (io::lock_held(dir))
    throw InputError("profile: --output " + o.output + ": " + dir + " is in use (a run continues there); choose "
                     "another --output");
  std::filesystem::remove_all(dir, ec);
  if (ec) throw InputError("profile: --output " + o.output + ": cannot remove the previous scratch run " + dir + ": " + ec.message());
  // The run directories under <output>/runs/ are the profile's own scratch: a new profile
  // into the same output replaces them (as it replaces profile.json and report.md).
  for (const std::string& kv : {std::string("pretrain.steps=0"), std::string("eval.steps=0"),
                                std::string("run.checkpoint_every=0"), std::string("run.overwrite=true"),
                                "optim.iterations=" + std::to_string(total), std::string("optim.minutes=0"),
                                "optim.log_every=" + std::to_string(total + 1),
                                "run.output=" + dir})
    overrides.push_back(kv);
  const Config config = load_config(config_path, overrides);
  Trainer trainer(config);
  const auto& setup = trainer.setup();
  MoleculeProfile m;
  // A config of several molecules trains a batch of them per iteration: the row is that batch
  // (its molecules named, the largest one's electrons, the walkers of all that one iteration trains).
  const std::size_t n_mol = setup.molecules.size();
  const std::size_t per_step = config.optim.molecules_per_step > 0
                                   ? std::min<std::size_t>(n_mol, config.optim.molecules_per_step)
                                   : n_mol;
  // (a molecule file is its scratch run's label, its molecule's name: the full path filled every
  // table row, a user audit)
  m.molecule = molecule.empty() ? batch_label(setup) : looks_like_path(molecule) ? label : molecule;
  for (const auto& mol : setup.molecules) m.n_electrons = std::max(m.n_electrons, mol.system.n_electrons());
  m.walkers = config.sampler.walkers * static_cast<int>(per_step);
  m.molecules_per_iteration = static_cast<int>(per_step);
  m.warmup = warmup;
  for (const auto& p : setup.wf->parameters()) m.parameters += p.numel();
  report.ansatz = config.model.type;
  report.laplacian = config.hamiltonian.laplacian;
  report.optimizer = config.optim.type;
  report.dtype = config.run.dtype;
  report.device = config.run.device;
  report.threads = torch::get_num_threads();

  const int cuda = cuda_index(config.run.device);
  StageRecorder recorder(cuda);
  trainer.timers().set_observer(&recorder);
  OpProfiler profiler(cuda >= 0, config.run.dtype == "float32" ? 4 : 8);
  std::map<std::string, std::vector<double>> seconds, peaks, held;
  std::vector<double> iteration, stage_sum;
  std::map<std::string, double> previous;
  Clock::time_point previous_time;
  std::vector<std::map<std::string, StageOps>> profiled;  // one per profiled iteration
  trainer.set_iteration_hook([&](std::int64_t t) {
    const auto now = Clock::now();
    std::map<std::string, double> current;
    for (const auto& [stage, e] : trainer.timers().stages()) current[stage] = e.seconds;
    auto peak = recorder.take_peaks();
    auto before = recorder.take_held();
    auto device = recorder.take_device_seconds();  // CUDA events (empty on the CPU)
    if (t > warmup && t <= warmup + o.iterations) {  // iteration t − 1 was a timed one
      double sum = 0;
      for (const auto& [stage, s] : current) {
        const double host = s - (previous.count(stage) ? previous[stage] : 0.0);
        const double d = recorder.event_clock() && device.count(stage) ? device[stage] : host;
        seconds[stage].push_back(d);
        peaks[stage].push_back(static_cast<double>(peak[stage]));
        held[stage].push_back(static_cast<double>(before[stage]));
        if (stage.find('.') == std::string::npos) sum += d;
      }
      stage_sum.push_back(sum);
      iteration.push_back(std::chrono::duration<double>(now - previous_time).count());
    }
    // Each profiled iteration is its own profiler session (medians over them below).
    if (t > warmup + o.iterations && t <= total) profiler_stop(profiler, recorder, profiled);
    if (t >= warmup + o.iterations && t < total) {
      recorder.set_ranges(true);
      profiler.start();
    }
    previous = std::move(current);
    previous_time = Clock::now();
    return StopAction::none;
  });
  log::info(strfmt("profile %s: %s%d electron%s, %d walkers, %d warm-up + %d timed + %d profiled iterations",
                   m.molecule.c_str(),
                   n_mol > 1 ? strfmt("%zu of %zu molecules per iteration, up to ", per_step, n_mol).c_str() : "",
                   m.n_electrons, m.n_electrons == 1 ? "" : "s", m.walkers, warmup, o.iterations, o.profiled));
  if (warmup > o.warmup)
    log::info(strfmt("  (%d warm-up iterations, not %d: until each molecule has been trained once)", warmup, o.warmup));
  const auto mark_scratch = [&] {
    std::ofstream marker(dir + "/" + kScratchMarker);
    marker << "A scratch run of 'nnvmc profile': a profile into the same --output replaces this directory.\n";
    if (!marker) throw InputError("profile: --output " + o.output + ": cannot write " + dir + "/" + kScratchMarker);
  };
  mark_scratch();  // (before the run too: one killed outright blocked every later profile, a user audit)
  const TrainOutcome outcome = trainer.run(/*final_eval=*/false);
  trainer.timers().set_observer(nullptr);
  if (outcome.interrupted)
    throw Interrupted("profile: interrupted (no report written: profile.json and report.md are as they were; the "
                      "scratch runs it made, which replace an earlier profile's of the same molecules, are removed)");
  mark_scratch();  // again: its checkpoint dropped the mark, as a user's run started there does
  report.stage_clock = recorder.event_clock() ? "cuda events" : cuda >= 0 ? "host clock, device synchronised" : "host clock";

  m.iteration_seconds = median(iteration);
  m.stage_seconds = median(stage_sum);
  m.iteration_series = iteration;
  m.stage_series = stage_sum;
  std::vector<double> share;
  for (size_t i = 0; i < iteration.size(); ++i) share.push_back(iteration[i] > 0 ? stage_sum[i] / iteration[i] : 0.0);
  m.stage_share = median(share);
  for (const auto& [stage, v] : seconds) {
    m.stages[stage].seconds = median(v);
    m.stages[stage].peak_bytes = median(peaks[stage]);
    m.stages[stage].held_bytes = median(held[stage]);
  }
  for (auto& [stage, so] : median_of(profiled)) {
    m.stages[stage].ops = so;
    if (stage.find('.') == std::string::npos && stage != kOutsideStages &&
        std::find(kNonComputeStages.begin(), kNonComputeStages.end(), stage) == kNonComputeStages.end()) {
      m.profiled_wall += so.wall_seconds;
      m.profiled_ops += so.seconds();
    }
  }
  if (o.profiled == 0)
    log::info(strfmt("  iteration %.4f s (stages %.4f s); operators not profiled (--profile-iterations 0)",
                     m.iteration_seconds, m.stage_seconds));
  else
    log::info(strfmt("  iteration %.4f s (stages %.4f s); profiled operators cover %.0f%% of the compute stages' time"
                     " (summed over threads)",
                     m.iteration_seconds, m.stage_seconds,
                     m.profiled_wall > 0 ? 100.0 * m.profiled_ops / m.profiled_wall : 0.0));
  return m;
}

}  // namespace

PowerLaw fit_power_law(const std::vector<double>& n, const std::vector<double>& y) {
  PowerLaw f;
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  int k = 0;
  for (size_t i = 0; i < n.size() && i < y.size(); ++i) {
    if (!(n[i] > 0 && y[i] > 0)) continue;
    const double x = std::log(n[i]), v = std::log(y[i]);
    sx += x, sy += v, sxx += x * x, sxy += x * v, ++k;
  }
  f.points = k;
  const double den = k * sxx - sx * sx;
  if (k < 2 || std::abs(den) < 1e-12) return f;
  f.exponent = (k * sxy - sx * sy) / den;
  f.prefactor = std::exp((sy - f.exponent * sx) / k);
  if (k >= 3) {  // the slope's standard error: residual variance over the centred Σx²
    double ssr = 0;
    for (size_t i = 0; i < n.size() && i < y.size(); ++i) {
      if (!(n[i] > 0 && y[i] > 0)) continue;
      const double r = std::log(y[i]) - std::log(f.prefactor) - f.exponent * std::log(n[i]);
      ssr += r * r;
    }
    f.exponent_err = std::sqrt(ssr / (k - 2) / (den / k));
  }
  return f;
}

double relative_spread(std::vector<double> v) {
  if (v.size() < 2) return 0.0;
  std::sort(v.begin(), v.end());
  const auto quantile = [&](double q) {
    const double x = q * static_cast<double>(v.size() - 1);
    const auto lo = static_cast<std::size_t>(x);
    const std::size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (x - static_cast<double>(lo)) * (v[hi] - v[lo]);
  };
  const double mid = quantile(0.5);
  if (!(mid > 0)) return 0.0;
  return v.size() < 4 ? (v.back() - v.front()) / mid : (quantile(0.75) - quantile(0.25)) / mid;
}

std::vector<std::string> top_level_stages(const MoleculeProfile& m) {
  std::vector<std::string> out;
  for (const char* s : {"sampling", "local_energy", "gradient", "optimizer", "bookkeeping"})
    if (m.stages.count(s)) out.push_back(s);
  for (const auto& [s, st] : m.stages)
    if (s.find('.') == std::string::npos && s != kOutsideStages &&
        std::find(out.begin(), out.end(), s) == out.end())
      out.push_back(s);
  return out;
}

ProfileReport run_profile(const std::string& config_path, const std::vector<std::string>& overrides,
                          const ProfileOptions& options) {
  if (options.iterations < 1) throw InputError("profile: --iterations must be >= 1");
  if (options.warmup < 1) throw InputError("profile: --warmup must be >= 1 (the first iteration calibrates chunks)");
  if (options.profiled < 0) throw InputError("profile: --profile-iterations must be >= 0");
  // The keys profile sets for its scratch runs: a user's override of one has no effect.
  static const std::pair<const char*, const char*> kSetByProfile[] = {
      {"pretrain.steps", "profile times training iterations without pretraining"},
      {"eval.steps", "profile runs no evaluation"},
      {"optim.iterations", "use --warmup, --iterations and --profile-iterations"},
      {"optim.minutes", "profile runs --warmup + --iterations + --profile-iterations iterations"},
      {"run.output", "use --output"},
      {"run.checkpoint_every", "profile's scratch runs write one checkpoint, at their end"}};
  for (const auto& o : overrides)
    for (const auto& [key, advice] : kSetByProfile)
      if (override_sets(o, key)) log::warn(std::string("profile: '") + o + "' has no effect (" + advice + ")");
  if (!options.molecules.empty())  // (refused as two overrides choosing the molecules, naming one the user never gave)
    for (const auto& o : overrides)
      for (const char* key : {"system.molecule", "system.molecules", "system.dataset"})
        if (override_sets(o, key))
          throw InputError("profile: '" + o + "' and --molecules both choose the molecules; give them with --molecules");
  ProfileReport r;
  r.config = config_path;
  r.options = options;
  const std::vector<std::string> molecules = options.molecules.empty() ? std::vector<std::string>{""} : options.molecules;
  // (first: a missing config was reported as a problem of the --output its name makes, a user audit)
  const std::vector<std::string> labels = check_molecules(config_path, overrides, molecules);
  std::error_code ec;
  if (std::filesystem::exists(options.output, ec) && !std::filesystem::is_directory(options.output, ec))
    throw InputError("profile: --output " + options.output + " exists and is not a directory");
  if (io::is_filesystem_root(options.output))
    throw InputError("profile: --output " + options.output + " is the filesystem's root directory; choose another directory");
  // profile.json & co. would be mixed into a run, or replace a comparison's report.md
  if (const std::string marker = io::training_run_marker(options.output); !marker.empty())
    throw InputError("profile: --output " + options.output + " holds a training run (" + marker +
                     "); choose another directory");
  if (const std::string marker = io::comparison_marker(options.output); !marker.empty())
    throw InputError("profile: --output " + options.output + " holds a comparison (" + marker +
                     "); choose another directory");
  if (const std::string outer = io::enclosing_output(options.output); !outer.empty())  // (e.g. a comparison's cells/)
    throw InputError("profile: --output " + options.output + " lies in a " + outer + "; choose another directory");
  // The files a profile writes replace an earlier profile's (it has profile.json), nobody else's
  // (a user audit: a directory's own report.md was replaced and its roofline.png removed).
  const auto refuse_if_there = [&](const char* f) {
    if (std::filesystem::exists(options.output + "/" + f, ec))
      throw InputError("profile: --output " + options.output + " holds " + f +
                       ", not an earlier profile's (it has no profile.json), which the profile would replace; "
                       "choose another directory");
  };
  if (!std::filesystem::exists(options.output + "/profile.json", ec)) {
    for (const char* f : kProfileReportFiles) refuse_if_there(f);
    for (const char* f : kProfilePlotFiles) refuse_if_there(f);
  }
  // A profile that fails or is stopped (Ctrl-C) removes the scratch run directories it wrote,
  // and the directories above them it created while they are empty; nothing else under --output
  // (found by a user audit: an error on a later molecule left runs/<first> behind).
  const io::CreatedDirectories parents = io::CreatedDirectories::create(options.output + "/runs", ec);
  if (ec)  // (named here: the first scratch run blamed run.output, a key the user never gave)
    throw InputError("profile: --output " + options.output + ": cannot create directory '" + options.output +
                     "/runs': " + ec.message());
  io::DirectoryLock lock;  // two profiles into one --output would replace each other's scratch runs
  std::vector<std::string> made;
  try {
    lock = io::DirectoryLock(options.output, "profile: --output");
    // A profile replaces its own scratch runs: a directory of that name under <output>/runs/
    // without the scratch marker is anything else (e.g. --output . where runs/ holds the
    // user's training runs), which it would replace. (Under the lock: a profile running into
    // this --output was named as a directory to remove by hand, a user audit.)
    for (size_t i = 0; i < molecules.size(); ++i) {
      const std::string dir = options.output + "/runs/" + labels[i];
      if (!std::filesystem::exists(dir, ec) || std::filesystem::exists(dir + "/" + kScratchMarker, ec)) continue;
      throw InputError("profile: --output " + options.output + ": " + dir + " is not a profile's scratch run (" +
                       kScratchMarker + "), and the profile of '" +
                       (molecules[i].empty() ? "the config's molecules" : molecules[i]) +
                       "' would replace it; choose another --output (a scratch run an earlier nnvmc left when killed "
                       "outright has no such file either: remove it by hand)");
    }
    for (size_t i = 0; i < molecules.size(); ++i) {
      made.push_back(options.output + "/runs/" + labels[i]);  // (a previous scratch run there goes first)
      r.molecules.push_back(profile_molecule(config_path, overrides, molecules[i], labels[i], options, r));
    }
    // (before the roofline: its arrays, 216 MiB on the CPU, are no part of the training's memory, a review)
    r.process_peak_bytes = peak_resident_bytes();
    r.cpu = read_cpu_peak();
    if (options.roofline) {
      log::info("roofline: measuring GEMM peak and triad bandwidth");
      r.roofline = measure_roofline(r.device, r.dtype);
    }
    throw_if_stop_requested("the roofline measurement (nothing written)");
  } catch (...) {
    for (const auto& dir : made) std::filesystem::remove_all(dir, ec);
    if (lock.created()) std::filesystem::remove(std::filesystem::path(options.output) / io::kLockFileName, ec);
    parents.remove_if_empty();
    throw;
  }
  std::vector<double> ne;
  for (const auto& m : r.molecules) ne.push_back(m.n_electrons);
  std::set<std::string> stages;
  for (const auto& m : r.molecules)
    for (const auto& [s, st] : m.stages)
      if (s != kOutsideStages) stages.insert(s);
  stages.insert("iteration");
  for (const auto& s : stages) {
    std::vector<double> t, mem;
    for (const auto& m : r.molecules) {
      const auto it = m.stages.find(s);
      t.push_back(s == "iteration" ? m.iteration_seconds : it != m.stages.end() ? it->second.seconds : 0.0);
      mem.push_back(it != m.stages.end() ? it->second.peak_bytes : 0.0);
    }
    r.time_scaling[s] = fit_power_law(ne, t);
    if (s != "iteration") r.memory_scaling[s] = fit_power_law(ne, mem);
  }
  r.warnings = timing_warnings(r, load_average_1min(), std::thread::hardware_concurrency());
  // (under the lock: another profile into this --output waits for the report too)
  if (options.write_outputs) write_profile_outputs(r, options.output, options.plots);
  // An earlier profile's scratch runs of other molecules go: the directory holds this profile's
  // (a user audit found runs/h2 and runs/lih of an earlier profile beside a report without them).
  for (const auto& entry : std::filesystem::directory_iterator(options.output + "/runs", ec)) {
    const std::string dir = entry.path().string();
    if (std::find(made.begin(), made.end(), dir) == made.end() && std::filesystem::exists(dir + "/" + kScratchMarker, ec) &&
        !io::lock_held(dir))  // (one a user continues with train --resume is theirs)
      std::filesystem::remove_all(dir, ec);
  }
  return r;
}

}  // namespace nnvmc::profile
