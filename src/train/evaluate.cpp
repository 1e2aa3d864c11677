#include "train/evaluate.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/errors.hpp"
#include "train/distributed.hpp"
#include "train/finite_walkers.hpp"
#include "train/sample_moments.hpp"
#include "train/stop_request.hpp"

namespace nnvmc {

int fresh_walkers_burn_in(const System& s) {
  int z_max = 1;
  for (const auto& atom : s.atoms) z_max = std::max(z_max, atom.Z);
  return std::max(kMinFreshWalkersBurnIn, 20 * z_max * z_max);
}

bool prefers_walker_chains(const BlockingResult& stats, int walkers) {
  return stats.n < 2 || walkers >= kMinWalkersForChainsError;
}

namespace {

/// The local energies of a stretch of an evaluation's steps, per walker (chain).
struct Segment {
  torch::Tensor sum, count, sum_sq;  ///< [B] per walker; sum_sq: all walkers' squares (scalar)

  /// `e` [B'] the step's finite energies, `finite` which of the B walkers they are
  void add(const torch::Tensor& e, const FiniteWalkers& f) {
    if (!sum.defined()) {
      sum = torch::zeros({f.mask.defined() ? f.mask.size(0) : e.size(0)}, e.options());
      count = torch::zeros_like(sum);
      sum_sq = torch::zeros({}, e.options());
    }
    if (f.excluded > 0) {
      sum.index_put_({f.mask}, sum.index({f.mask}) + e);
      count.index_put_({f.mask}, count.index({f.mask}) + 1);
    } else {
      sum += e;
      count += 1;
    }
    sum_sq += e.square().sum();
  }

  /// The segment's mean energy and its error: the spread of the walkers' averages (`chains`), or
  /// the reblocking of the walker-averaged series[from, to), at least its σ/√n widened by the
  /// whole series' autocorrelation time `tau` (a short stretch has no plateau of its own); never
  /// below √(variance / samples).
  std::pair<double, double> mean_and_error(const std::vector<double>& series, int from, int to, bool chains,
                                           double tau) const {
    const double n = count.sum().item<double>();
    const double mean = sum.sum().item<double>() / n;
    const double independent = std::sqrt(std::max(sum_sq.item<double>() / n - mean * mean, 0.0) / n);
    double error = independent;
    if (chains) {
      const torch::Tensor seen = count > 0;
      const torch::Tensor means = (sum.index({seen}) / count.index({seen})).contiguous();
      error = walker_chains_error(std::vector<double>(means.data_ptr<double>(), means.data_ptr<double>() + means.numel()));
    } else {
      const auto stretch = blocking_analysis(std::vector<double>(series.begin() + from, series.begin() + to));
      error = std::max(stretch.error, stretch.naive_error * std::sqrt(std::max(tau, 1.0)));
    }
    return {mean, std::max(error, independent)};
  }
};

}  // namespace

EvalResult evaluate(VmcSetup& s, const EvalOptions& options, StageTimers& timers,
                    const ProgressFn& progress, std::size_t molecule) {
  const auto logabs = s.logabs_fn(molecule);
  const auto key = s.graph_key(molecule);
  auto& m = s.molecules.at(molecule);
  auto& sampler = *m.sampler;
  EvalResult out;
  out.steps = options.steps;
  out.walkers = s.config.sampler.walkers;
  out.laplacian = s.config.hamiltonian.laplacian;
  out.burn_in = options.burn_in;
  out.steps_per_iteration = s.config.sampler.steps_per_iteration;
  out.e_ref = m.system.e_ref;
  out.e_ref_source = m.system.e_ref_source;
  out.lower_bound = m.system.energy_lower_bound();
  const int block = std::max(1, s.config.sampler.steps_per_iteration);
  {
    auto scope = timers.scope("sampling");
    sampler.refresh(logabs);
    for (int done = 0; done < options.burn_in; done += block) {
      throw_if_stop_requested_on_any_rank("the evaluation's burn-in");
      sampler.adapt(sampler.run(logabs, std::min(block, options.burn_in - done), key));
    }
  }
  out.step_size = sampler.step_size();  // frozen from here on: measurement uses a fixed kernel
  double acc = 0;
  SampleMoments moments;  // all samples' local energies
  torch::Tensor walker_sum, walker_count;  // each walker's (chain's) local energies over the steps
  // the same over the first and the last steps, for the stationarity check (kDriftFirstFraction)
  const int n_first = static_cast<int>(kDriftFirstFraction * options.steps);
  const int last_from = options.steps - static_cast<int>(kDriftLastFraction * options.steps);
  Segment first, last;
  // Each walker's series, with fewer walkers than their averages need for the error bar: their
  // pooled autocorrelation reads τ (pooled_autocorrelation_estimate). Not kept once one is left out.
  std::vector<std::vector<double>> walker_series;
  bool chains_whole = out.walkers < kMinWalkersForChainsError;
  for (int t = 0; t < options.steps; ++t) {
    throw_if_stop_requested_on_any_rank("the evaluation");
    {
      auto scope = timers.scope("sampling");
      acc += sampler.run(logabs, s.config.sampler.steps_per_iteration, key);
    }
    auto scope = timers.scope("local_energy");
    // All walkers' energies on every rank (every rank then computes the same statistics).
    auto e = all_walkers((*m.local_energy)(*s.wf, sampler.positions(), key).energy.to(torch::kFloat64).cpu());
    const FiniteWalkers finite = finite_walkers(e);
    if (!finite.ok)
      throw NumericalError("evaluation step " + std::to_string(t + 1) + ": " + std::to_string(finite.excluded) +
                           " of " + std::to_string(e.size(0)) + " local energies are non-finite");
    if (chains_whole && finite.excluded == 0) {
      walker_series.resize(static_cast<std::size_t>(e.size(0)));
      const auto values = e.contiguous();
      for (std::size_t w = 0; w < walker_series.size(); ++w) walker_series[w].push_back(values.data_ptr<double>()[w]);
    } else {
      chains_whole = false;
    }
    if (!walker_sum.defined()) {
      walker_sum = torch::zeros_like(e);
      walker_count = torch::zeros_like(e);
    }
    if (finite.excluded > 0) {
      walker_sum.index_put_({finite.mask}, walker_sum.index({finite.mask}) + e.index({finite.mask}));
      walker_count.index_put_({finite.mask}, walker_count.index({finite.mask}) + 1);
      e = e.index({finite.mask});
    } else {
      walker_sum += e;
      walker_count += 1;
    }
    if (t < n_first) first.add(e, finite);
    if (t >= last_from) last.add(e, finite);
    out.excluded += finite.excluded;
    out.series.push_back(e.mean().item<double>());
    const torch::Tensor values = e.contiguous();
    moments.add(values.data_ptr<double>(), values.numel());
    if (progress) progress(t + 1, options.steps);
  }
  const BlockingResult whole = blocking_analysis(out.series);
  const bool chains = prefers_walker_chains(whole, out.walkers);
  // (with few walkers the stretches' errors need the series' autocorrelation time: without a
  // plateau it is not known, and the check is inconclusive; it flagged 15 % of equilibrated
  // 4-walker evaluations, a review)
  if (options.steps >= kMinDriftSteps && (chains || whole.plateau)) {
    const auto [m1, e1] = first.mean_and_error(out.series, 0, n_first, chains, whole.autocorr_time);
    const auto [m2, e2] = last.mean_and_error(out.series, last_from, options.steps, chains, whole.autocorr_time);
    out.drift_first = m1;
    out.drift_last = m2;
    out.drift_z = (m1 - m2) / std::sqrt(e1 * e1 + e2 * e2);
  }
  out.stats = whole;
  out.error_batch_means = batch_means_error(out.series);
  out.autocorr = autocorrelation_estimate(out.series);
  if (chains_whole) out.autocorr_walkers = pooled_autocorrelation_estimate(walker_series);
  out.acceptance = options.steps > 0 ? acc / options.steps : 0.0;
  out.variance = moments.variance();
  out.variance_rel_error = out.variance_rel_error_independent = moments.variance_rel_error();
  out.largest_share = moments.largest_share();
  if (walker_sum.defined()) {
    const torch::Tensor seen = walker_count > 0;
    const torch::Tensor means = (walker_sum.index({seen}) / walker_count.index({seen})).contiguous();
    out.error_walkers = walker_chains_error(std::vector<double>(means.data_ptr<double>(),
                                                                means.data_ptr<double>() + means.numel()));
  }
  // With enough walkers the error bar is the spread of their own averages (independent chains,
  // unbiased at any length; see kMinWalkersForChainsError), the reblocking a cross-check.
  out.error_reblocking = out.stats.n >= 2 ? out.stats.error : std::numeric_limits<double>::quiet_NaN();
  if (std::isfinite(out.error_walkers) && prefers_walker_chains(out.stats, out.walkers)) {
    out.error_method = "walker chains";
    out.stats.error = out.error_walkers;
    if (out.stats.n < 2) out.stats.naive_error = out.error_walkers;
    out.stats.autocorr_time = out.stats.n >= 2 && out.stats.naive_error > 0
                                  ? std::pow(out.stats.error / out.stats.naive_error, 2)
                                  : std::numeric_limits<double>::quiet_NaN();
  }
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  if (out.error_method == "reblocking" && out.stats.n >= 2) {
    // The Sokal window's estimates, of the averaged series and pooled over the walkers' own
    // series, are further readings of the same error: the error bar is the largest (a plateau
    // found in a short series is mostly one whose block errors came out low), and a series
    // shorter than kMinAutocorrTimesInSeries τ is not called reliable.
    double tau = std::max(1.0, out.stats.plateau ? out.stats.autocorr_time : 1.0);
    for (const AutocorrEstimate* a : {&out.autocorr, &out.autocorr_walkers}) {
      if (!std::isfinite(a->error)) continue;
      tau = std::max(tau, a->tau);
      if (a->error > out.stats.error) {
        out.stats.error = a->error;
        out.error_from_window = true;
      }
    }
    // Without a plateau the walkers' own averages (independent chains, however few) are one more
    // reading: the largest counts (a user audit: 8 walkers x 50 steps at τ ≈ 10 iterations had
    // error bars 1.6x too small, 44 % within 1σ; with the walkers' spread 58 %, rms z 1.07).
    if (!out.stats.plateau && std::isfinite(out.error_walkers) && out.error_walkers > out.stats.error) {
      out.stats.error = out.error_walkers;
      out.error_from_walker_spread = true;
      out.error_from_window = false;
    }
    const bool tau_known = out.stats.plateau || std::isfinite(out.autocorr_walkers.tau) || std::isfinite(out.autocorr.tau);
    if (tau_known) {
      out.autocorr_times_in_series = double(out.stats.n) / tau;
      out.stats.autocorr_time = tau;
    } else {  // (without a plateau the reblocking's τ is a lower bound at best: not stated)
      out.stats.autocorr_time = nan;
    }
  }
  // The walkers' averages against a series of a few steps give no autocorrelation time (two
  // steps read as τ = 52 iterations, a user audit).
  if (out.error_method == "walker chains" && out.stats.n < kMinPlateauBlocks) out.stats.autocorr_time = nan;
  // No estimate may claim more than the samples hold: correlated chains only widen the error of
  // independent samples, so an estimate below it is the noise of a short run (a user audit: 5
  // steps x 5 walkers of He gave 0.00097, 8 of its own error bars below exact, where independent
  // samples give 0.005; one sample gave ± 0 with variance 0).
  const long count = static_cast<long>(moments.count());
  // The variance's own error from the fourth moment counts every sample as independent: along a
  // chain they are not, and it is widened by the energy's autocorrelation time (as the mean's
  // error is; a user audit measured seed-to-seed spreads 6-12x the unwidened one at τ ≈ 8).
  if (std::isfinite(out.stats.autocorr_time)) {
    out.variance_rel_error *= std::sqrt(std::max(out.stats.autocorr_time, 1.0));
    out.variance_error_widened = true;
  }
  if (count < 2) {
    out.stats.error = out.variance = out.stats.autocorr_time = out.stats.naive_error = nan;
  } else {
    out.error_independent = std::sqrt(std::max(out.variance, 0.0) / static_cast<double>(count));
    if (out.stats.error < out.error_independent) {
      out.stats.error = out.error_independent;
      out.error_floored = true;
    }
  }
  return out;
}

}  // namespace nnvmc
