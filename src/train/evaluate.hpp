#pragma once
/// @file evaluate.hpp
/// Energy evaluation with fixed parameters: MH sampling, local energies, reblocking.
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "core/timer.hpp"
#include "train/blocking.hpp"
#include "train/sample_moments.hpp"
#include "train/setup.hpp"

namespace nnvmc {

/// Walkers from which the spread of their averages is an evaluation's error bar (its own relative
/// uncertainty is about 1/√(2(W − 1)): 18 % at 16, 4 % at 256). Independent chains, it is
/// unbiased at any series length, where choosing between it and the reblocking by the reblocking's
/// plateau is not: a plateau is found mostly where the noisy block errors came out low (AR(1)
/// evaluations: up to 18 % too small, 60 % covering; 256 walkers: 0.97–1.02 of the spread and
/// 2–4× more precise than the reblocking; bench/error_bars_walkers.py).
constexpr int kMinWalkersForChainsError = 16;

/// Whether an evaluation of `walkers` walkers whose walker-averaged series gave `stats` states the
/// spread of the walkers' averages as its error bar: with kMinWalkersForChainsError walkers or
/// more, or after one step (the reblocking, a cross-check then, needs a series).
bool prefers_walker_chains(const BlockingResult& stats, int walkers);

/// Stationarity check of an evaluation (Geweke's diagnostic): the mean energy of its first
/// kDriftFirstFraction of steps against that of its last kDriftLastFraction, in units of their
/// combined error. Walkers that were not in equilibrium when the measurement began (a burn-in
/// too short for a heavy atom, whose adapted step size is set by the core electrons: Ar drifted
/// by 0.8 Eh over thousands of steps, a user audit) drift; equilibrated ones do not. Series
/// shorter than kMinDriftSteps are not checked, nor those of fewer than kMinWalkersForChainsError
/// walkers whose reblocking finds no plateau (their autocorrelation time is not known).
constexpr double kDriftFirstFraction = 0.2, kDriftLastFraction = 0.5;
constexpr int kMinDriftSteps = 20;
constexpr double kDriftThreshold = 3.5;  ///< |z| above this: the walkers were not in equilibrium
/// Mean acceptance below this: the walkers hardly moved while measuring (a step size that was
/// never adapted, eval.burn_in = 0), and the result still holds their starting positions.
constexpr double kMinUsefulAcceptance = 0.05;

/// The walkers' averages spread more than this many times the reblocking error of their mean
/// series (both estimate the same error when the walkers mix): walkers that keep to separate
/// regions (nodal pockets of a trained wavefunction, a trap near a nucleus) differ by constant
/// offsets that the mean series cannot show, and the energy depends on where they started (a
/// user audit: an unfrozen PauliNet's Li gave ±0.041 against reblocking's ±0.0072, and
/// evaluations disagreed beyond either). Healthy evaluations give a ratio near 1.
constexpr double kMaxWalkerSpreadRatio = 3.0;

/// A reblocking error bar needs a series at least this many autocorrelation times long (the larger
/// of the reblocking's and the Sokal window's τ): in shorter series the plateau test passes mostly
/// where the noisy block errors came out low (a user audit: 8 walkers, 200 steps, τ ≈ 4.3: the
/// error bars called reliable were 1.5× too small, 7 of 18 within 1σ of the exact energy).
constexpr double kMinAutocorrTimesInSeries = 50;

/// The burn-in should be at least this many autocorrelation times of the measured series (in MH
/// steps): walkers that come from training a wavefunction that has since changed (natural-gradient
/// steps move it far) relax on that time scale. A user audit's SPRING-trained LiH measured τ = 28
/// iterations (278 MH steps) after a burn-in of 50 steps and came out 27 mEh above the same
/// evaluation after 1500; trained H2, He and LiH of other optimizers measured 0.7-3.7 iterations.
constexpr double kMinBurnInAutocorrTimes = 1.0;
/// The burn-in a warning about a short one suggests, in autocorrelation times.
constexpr double kSuggestedBurnInAutocorrTimes = 5.0;

/// Burn-in (MH steps) of walkers placed afresh around the nuclei, unless the user gives one: a
/// shifted He atom needed about 300 (a user audit). Also what repeated copies of checkpoint
/// walkers get to decorrelate.
constexpr int kMinFreshWalkersBurnIn = 500;

/// The burn-in walkers placed afresh around the nuclei of `s` need: 20 Z_max² MH steps, at least
/// kMinFreshWalkersBurnIn (720 for carbon, 2000 for neon, 6480 for argon). The one step size adapts
/// to the core electrons (~1/Z bohr), so valence electrons placed around the nuclei need ~Z² steps
/// to spread out (a user audit: Ar's energy was still 0.6-0.8 Eh high after 500 and 1000 steps,
/// Ne's 0.3-0.5 Eh after 500; Ar settled after 2000-4000).
int fresh_walkers_burn_in(const System& s);

/// Relative slack below System::energy_lower_bound before an estimate counts as below it: the
/// bound is exact for one electron on one nucleus (H: −0.5), where a mean within noise of it must
/// not read as broken (a review: a correct H training would have been stopped at random).
inline constexpr double kLowerBoundSlack = 0.05;

/// An estimate `mean ± error` lies below `bound` (System::energy_lower_bound): by more than 3
/// error bars and kLowerBoundSlack·|bound|. False for a NaN bound. A few walkers far below carry
/// the mean and its error bar alike, so about ten are needed to trip it: that is deliberate. A
/// cusp-less ψ puts single walkers near a nucleus at local energies far below the bound (8
/// walkers on H averaged −1.02 ± 0.81 Eh in a correct run), which the heavy-tails warning names;
/// a test of the mean alone stopped such runs (a review's suggestion, tried and withdrawn).
inline bool energy_below_bound(double mean, double error, double bound) {
  if (!std::isfinite(bound)) return false;
  const double margin = 3 * (std::isfinite(error) ? error : 0.0) + kLowerBoundSlack * std::fabs(bound);
  return mean + margin < bound;
}

/// Result of an evaluation.
struct EvalResult {
  BlockingResult stats;        ///< mean energy, error bar, autocorrelation time (in iterations)
  double error_batch_means = 0;  ///< cross-check: batch-means standard error of the mean
  AutocorrEstimate autocorr;   ///< cross-check: Sokal-window autocorrelation time and error
  /// the same pooled over the walkers' own series (pooled_autocorrelation_estimate), with fewer
  /// than kMinWalkersForChainsError walkers and none left out; NaN otherwise
  AutocorrEstimate autocorr_walkers{std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::quiet_NaN(), 0};
  /// the reblocking's error bar was raised to a Sokal-window estimate (autocorr or autocorr_walkers)
  bool error_from_window = false;
  /// the reblocking found no plateau and its error bar was raised to the walkers' spread (error_walkers)
  bool error_from_walker_spread = false;
  /// cross-check: the spread of each walker's time average (walker_chains_error); NaN below 2 walkers
  double error_walkers = std::numeric_limits<double>::quiet_NaN();
  /// cross-check: the reblocking error of the walker-averaged series (its plateau: stats.plateau)
  double error_reblocking = std::numeric_limits<double>::quiet_NaN();
  /// how stats.error was found: "walker chains" (kMinWalkersForChainsError walkers or more, or one
  /// step), else "reblocking"
  std::string error_method = "reblocking";
  /// Whether the error bar can be trusted: a reblocking plateau, or the walkers' averages of at
  /// least kMinWalkersForChainsError walkers that are not copies of fewer (copies_not_apart).
  /// And the walkers were in equilibrium as far as can be seen: no drift, they moved, and the
  /// burn-in was not shorter than the autocorrelation time (a user audit: a Psiformer He+ whose
  /// walkers met a diffuse tail late measured τ = 327 iterations after 50 steps, 4 mEh off, and
  /// was called reliable).
  bool error_reliable() const {
    return (stats.plateau || (error_method == "walker chains" && walkers >= kMinWalkersForChainsError)) &&
           !series_too_short() && !drifting() && !hardly_moved() && !walkers_apart() && !below_lower_bound() &&
           !copies_not_apart() && !short_burn_in();
  }
  /// The walkers started as repeated copies of fewer (walkers_copied_from) and the burn-in was
  /// shorter than kMinFreshWalkersBurnIn: a copy and its original are not yet independent
  /// chains, and the walkers' spread understates the error (a user audit: 4096 copies of 256
  /// after 0 steps gave a bar 4x too small, marked reliable). The reblocking of the mean series
  /// is not fooled, and is not flagged.
  bool copies_not_apart() const {
    return walkers_copied_from > 0 && walkers > walkers_copied_from && burn_in < kMinFreshWalkersBurnIn &&
           error_method == "walker chains";
  }
  /// With the reblocking: the series is shorter than kMinAutocorrTimesInSeries autocorrelation
  /// times (autocorr_times_in_series).
  bool series_too_short() const {
    return error_method == "reblocking" && std::isfinite(autocorr_times_in_series) &&
           autocorr_times_in_series < kMinAutocorrTimesInSeries;
  }
  /// With the reblocking: the series' length in autocorrelation times, the largest of the
  /// reblocking's τ (with a plateau) and the Sokal windows' (stats.autocorr_time is that τ); NaN
  /// otherwise, and when no τ is known.
  double autocorr_times_in_series = std::numeric_limits<double>::quiet_NaN();
  /// Walkers that do not mix (see kMaxWalkerSpreadRatio): checked with at least
  /// kMinWalkersForChainsError walkers and a reblocking plateau.
  bool walkers_apart() const {
    return walkers >= kMinWalkersForChainsError && stats.plateau && std::isfinite(error_walkers) &&
           std::isfinite(error_reblocking) && error_reblocking > 0 &&
           error_walkers > kMaxWalkerSpreadRatio * error_reblocking;
  }
  /// Stationarity check (see kDriftThreshold): the two segments' means and the difference in
  /// units of their combined error. NaN when not checked: a series shorter than kMinDriftSteps,
  /// or fewer than kMinWalkersForChainsError walkers without a reblocking plateau.
  double drift_first = std::numeric_limits<double>::quiet_NaN();
  double drift_last = std::numeric_limits<double>::quiet_NaN();
  double drift_z = std::numeric_limits<double>::quiet_NaN();
  bool drifting() const { return std::isfinite(drift_z) && std::fabs(drift_z) > kDriftThreshold; }
  bool hardly_moved() const { return steps > 0 && acceptance < kMinUsefulAcceptance; }
  /// The burn-in was shorter than kMinBurnInAutocorrTimes autocorrelation times of the measured
  /// series (stats.autocorr_time iterations of steps_per_iteration MH steps each): walkers that
  /// did not start in equilibrium may not have reached it. False when τ is not known.
  bool short_burn_in() const {
    return std::isfinite(stats.autocorr_time) && steps_per_iteration > 0 &&
           burn_in < kMinBurnInAutocorrTimes * stats.autocorr_time * steps_per_iteration;
  }
  /// MH steps the walkers ran under this wavefunction before measuring (the evaluation's own
  /// burn-in, and the training's where no iteration changed the wavefunction since)
  int burn_in = 0;
  /// the walkers started as repeated copies of this many (more walkers than a checkpoint holds); 0: not
  std::int64_t walkers_copied_from = 0;
  /// the walkers were not taken from training: placed around the nuclei (a new geometry), or
  /// the start's (placed, or pretraining's) of a run that trained nothing
  bool fresh_walkers = false;
  int steps_per_iteration = 0; ///< MH steps per measurement iteration
  /// √(variance / samples): the error bar were every sample independent, the least a correlated
  /// run can have; stats.error is raised to it when both estimates fall below (error_floored).
  /// NaN below 2 samples, where stats.error, variance and the autocorrelation time are NaN too.
  double error_independent = std::numeric_limits<double>::quiet_NaN();
  bool error_floored = false;  ///< stats.error is error_independent (the estimates were below it)
  double variance = 0;         ///< variance of the local energy over all samples
  /// relative standard error of `variance` from the samples' fourth moment (SampleMoments),
  /// widened by √τ (stats.autocorr_time) for their correlation along the chains where τ is known
  /// (variance_error_widened); NaN below kMinValuesForVarianceError samples
  double variance_rel_error = std::numeric_limits<double>::quiet_NaN();
  /// the same counting every sample as independent: what heavy_tails() judges (its threshold
  /// was calibrated on it; correlation is not a tail)
  double variance_rel_error_independent = std::numeric_limits<double>::quiet_NaN();
  bool variance_error_widened = false;  ///< variance_rel_error includes the √τ widening
  /// the share of the samples' summed squared deviations that the largest one carries
  double largest_share = std::numeric_limits<double>::quiet_NaN();
  /// A few large local energies carry the variance (kMaxVarianceRelError): its estimate, and the
  /// error bar with it, are uncertain, and a longer run that meets more of them may find both larger.
  bool heavy_tails() const {
    return std::isfinite(variance_rel_error_independent) && variance_rel_error_independent > kMaxVarianceRelError;
  }
  double acceptance = 0;       ///< mean MH acceptance while measuring
  double step_size = 0;        ///< MH step size while measuring (adapted during burn-in only)
  int steps = 0;               ///< measurement iterations
  int walkers = 0;             ///< walkers per iteration
  /// hamiltonian.laplacian of the run: with "hutchinson", `variance` includes the probes' noise
  std::string laplacian;
  std::int64_t excluded = 0;   ///< samples left out for a non-finite local energy
  std::vector<double> series;  ///< walker-averaged energy per iteration
  /// the molecule file's best known energy (e_ref) and where it comes from, when it has one at
  /// this geometry (up to a rigid motion: congruent), charge and spin
  std::optional<double> e_ref;
  std::string e_ref_source;
  /// System::energy_lower_bound of the molecule (NaN: not known)
  double lower_bound = std::numeric_limits<double>::quiet_NaN();
  /// The energy lies below lower_bound (energy_below_bound): no wavefunction has it, so the
  /// walkers did not sample |ψ|² (a user audit: a diverged PauliNet evaluated to −8e25 Eh, exit 0).
  bool below_lower_bound() const { return energy_below_bound(stats.mean, stats.error, lower_bound); }
};

/// Progress callback: (iteration done, total).
using ProgressFn = std::function<void(int, int)>;

/// Evaluates molecule `molecule` of the setup: refreshes log|ψ| of its walkers (the parameters
/// may have changed since they moved), runs `options.burn_in` MH steps, adapting the step size toward the target acceptance after
/// every steps_per_iteration of them, then freezes the step size and measures `options.steps`
/// iterations of steps_per_iteration MH steps + a local-energy evaluation. The sampler must be
/// initialised. Non-finite local energies (walkers on a node) are left out and counted.
/// @throws NumericalError when more than max_excluded_walkers(B) energies of one iteration are
/// non-finite
EvalResult evaluate(VmcSetup& setup, const EvalOptions& options, StageTimers& timers,
                    const ProgressFn& progress = {}, std::size_t molecule = 0);

}  // namespace nnvmc
