#pragma once
/// @file profile.hpp
/// `nnvmc profile`: where the time of a training iteration goes. For each molecule the run
/// config's trainer runs warm-up iterations, then N timed iterations (stage times from the
/// trainer's own StageTimers scopes, peak working memory per stage; medians), then a few
/// iterations under libtorch's profiler (operator mix per stage). Together with the measured
/// roofline and power-law fits of time and memory against the number of electrons.
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "profile/op_profile.hpp"
#include "profile/roofline.hpp"

namespace nnvmc::profile {

/// What to profile.
struct ProfileOptions {
  std::vector<std::string> molecules;  ///< molecule names/files (empty: the config's molecule)
  int warmup = 3;                      ///< iterations before measuring (chunk calibration, caches)
  int iterations = 10;                 ///< timed iterations (medians over these)
  int profiled = 2;                    ///< iterations under the operator profiler (0: none)
  std::string output;                  ///< output directory (run directories go under runs/)
  bool roofline = true;                ///< measure the roofline
  /// Also write profile.json, profile.h5 and report.md (with plots when `plots`) into `output`
  /// before returning, while --output is still locked (false: the caller writes them).
  bool write_outputs = false;
  bool plots = true;
};

/// Stages that are not tensor work (results files, progress lines, checkpoints): reported,
/// but not part of the operators' coverage of the profiled time.
inline const std::vector<std::string> kNonComputeStages = {"bookkeeping"};

/// One stage of one molecule.
struct StageProfile {
  double seconds = 0;     ///< median per iteration (timed iterations)
  double peak_bytes = 0;  ///< median per-iteration peak working memory (allocated within the stage)
  double held_bytes = 0;  ///< median tensor memory held when the stage began (parameters, walkers, kept buffers)
  StageOps ops;           ///< operator mix per profiled iteration (medians over them)
};

/// One molecule.
struct MoleculeProfile {
  std::string molecule;             ///< its name, or for a config of several molecules the batch's names
  int n_electrons = 0;              ///< electrons (of the largest molecule of a batch)
  int walkers = 0;                  ///< walkers one iteration moves (all molecules of a batch)
  int molecules_per_iteration = 1;  ///< molecules one iteration trains (optim.molecules_per_step)
  int warmup = 0;  ///< warm-up iterations run: --warmup, or more until every molecule of a batch config was trained
  long long parameters = 0;
  double iteration_seconds = 0;  ///< median wall time of an iteration (hook to hook)
  double stage_seconds = 0;      ///< median over iterations of Σ top-level stage times
  double stage_share = 0;        ///< median over iterations of Σ top-level stage times / iteration time
  double profiled_wall = 0;      ///< Σ top-level compute stages' wall time per profiled iteration
  double profiled_ops = 0;       ///< Σ operator self time within those stages, per profiled iteration
  std::map<std::string, StageProfile> stages;  ///< top-level stages, sub-stages ("a.b"), outside
  std::vector<double> iteration_series;  ///< wall time of each timed iteration
  std::vector<double> stage_series;      ///< Σ top-level stage times of each timed iteration
};

/// time (or memory) ≈ prefactor · N_electrons^exponent, least squares in log-log.
struct PowerLaw {
  double exponent = std::numeric_limits<double>::quiet_NaN();
  /// standard error of the exponent from the fit's residuals (NaN below 3 points: a line
  /// through two has none; a user audit found bare exponents that fixed costs had flattened)
  double exponent_err = std::numeric_limits<double>::quiet_NaN();
  double prefactor = std::numeric_limits<double>::quiet_NaN();
  int points = 0;
};
PowerLaw fit_power_law(const std::vector<double>& n, const std::vector<double>& y);

/// Everything `nnvmc profile` reports.
struct ProfileReport {
  std::string config;     ///< the run config profiled
  std::string ansatz, laplacian, optimizer, dtype, device;
  int threads = 1;
  /// Where stage times come from: "host clock" (CPU), "cuda events" (a stage's device time),
  /// or "host clock, device synchronised" (CUDA without event support in this build).
  std::string stage_clock = "host clock";
  ProfileOptions options;
  std::vector<MoleculeProfile> molecules;
  Roofline roofline;      ///< measured (zeros when not measured)
  CpuPeak cpu;            ///< theoretical CPU peak inputs
  std::map<std::string, PowerLaw> time_scaling, memory_scaling;  ///< by stage
  /// The process's peak resident memory at the end (peak_resident_bytes: libraries, the
  /// profiler's event buffers, every molecule's tensors; −1 unknown). The per-stage figures are
  /// tensor memory only, 2–3× less (a user audit sized jobs from them).
  std::int64_t process_peak_bytes = -1;
  /// timing_warnings, taken once at the end of run_profile (stdout, report.md and profile.json
  /// give the same: the load they read apart could differ)
  std::vector<std::string> warnings;
};

/// Profiles `config_path` (with `overrides`) on each molecule. Writes nothing but the run
/// directories under options.output/runs/.
ProfileReport run_profile(const std::string& config_path, const std::vector<std::string>& overrides,
                          const ProfileOptions& options);

/// Spread of timings relative to their median: the interquartile range (the full range below
/// four values) over the median; 0 for fewer than two values.
double relative_spread(std::vector<double> v);

/// Top-level stages of a molecule in a fixed order (sampling, local_energy, gradient,
/// optimizer, then others), without sub-stages and the outside-stages entry.
std::vector<std::string> top_level_stages(const MoleculeProfile& m);

/// What makes the report's timings less trustworthy, one sentence each (stdout, report.md and
/// profile.json `warnings` all give them; a user audit found them on stdout only): a molecule's
/// iteration times spread by more than 25 % of their median, fewer than 3 timed iterations (no
/// spread to judge them by), a 1-minute load average (`load_average_1min`, from /proc/loadavg,
/// NaN when unknown) above the `cores`.
std::vector<std::string> timing_warnings(const ProfileReport& report, double load_average_1min, unsigned cores);

/// What a profile writes into its --output: its report files (write_profile_outputs) and its
/// plots with their log (plot_profile.py; an earlier profile's are removed first).
inline constexpr const char* kProfileReportFiles[] = {"profile.json", "profile.h5", "report.md"};
inline constexpr const char* kProfilePlotFiles[] = {"stage_bars.png", "op_mix.png", "roofline.png", "scaling.png",
                                                    "plot.log"};

/// Writes profile.json, profile.h5, report.md (and the plots when python3 can make them).
void write_profile_outputs(const ProfileReport& report, const std::string& dir, bool plots);

}  // namespace nnvmc::profile
