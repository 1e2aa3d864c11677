// The text an evaluation prints (nnvmc eval, the end of nnvmc train): its warnings must be about
// the error bar it states, not about a cross-check.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "common/text.hpp"
#include "train/summary.hpp"

using namespace nnvmc;
using nnvmc::test::contains;

namespace {
EvalResult evaluation(const std::string& method, int walkers, bool plateau) {
  EvalResult r;
  r.stats.mean = -2.9017;
  r.stats.error = 0.0014;
  r.stats.naive_error = 0.0010;
  r.stats.autocorr_time = 2.0;
  r.stats.n = 100;
  r.stats.plateau = plateau;
  r.error_method = method;
  r.walkers = walkers;
  r.steps = 100;
  r.acceptance = 0.5;
  return r;
}
}  // namespace

// An audit found every short `nnvmc eval` with 128 walkers warning that "the error bar is likely
// too small" because the reblocking (a cross-check there) had no plateau, while the stated error
// bar, the walkers' spread, was reliable (error_reliable true in the JSON).
TEST(EvalText, NoWarningWhenTheStatedWalkerSpreadIsReliableAndOnlyTheReblockingLacksAPlateau) {
  const auto r = evaluation("walker chains", 128, false);
  ASSERT_TRUE(r.error_reliable());
  const std::string text = eval_text(r);
  EXPECT_FALSE(contains(text, "warning")) << text;
  EXPECT_FALSE(contains(text, "UNRELIABLE")) << text;
  EXPECT_TRUE(contains(text, "reblocking (no plateau)")) << text;  // the cross-check still says so
}

TEST(EvalText, WarnsWhenTheStatedReblockingErrorHasNoPlateau) {
  const auto r = evaluation("reblocking", 8, false);
  ASSERT_FALSE(r.error_reliable());
  const std::string text = eval_text(r);
  EXPECT_TRUE(contains(text, "UNRELIABLE")) << text;
  EXPECT_TRUE(contains(text, "no block size passed the reblocking plateau test")) << text;
}

TEST(EvalText, WarnsWhenTheStatedWalkerSpreadComesFromTooFewWalkers) {
  const auto r = evaluation("walker chains", 4, false);
  ASSERT_FALSE(r.error_reliable());
  const std::string text = eval_text(r);
  EXPECT_TRUE(contains(text, "UNRELIABLE")) << text;
  EXPECT_TRUE(contains(text, "too few for a reblocking plateau")) << text;
}

// Without a plateau, an error bar raised to the walkers' spread says so beside the warning.
TEST(EvalText, AnErrorBarRaisedToTheWalkersSpreadSaysSo) {
  auto r = evaluation("reblocking", 4, false);
  r.error_reblocking = 0.0009;
  r.error_walkers = r.stats.error;
  r.error_from_walker_spread = true;
  const std::string text = eval_text(r);
  EXPECT_TRUE(contains(text, "no block size passed the reblocking plateau test")) << text;
  EXPECT_TRUE(contains(text, "note: the error bar is the spread of the 4 walkers' own averages, larger than the "
                             "reblocking's ± 0.000900")) << text;
}

// A reblocking plateau in a series shorter than kMinAutocorrTimesInSeries autocorrelation times is
// not trusted (a user audit: such error bars were 1.5× too small), and an error bar raised to the
// Sokal-window estimate pooled over the walkers says so.
TEST(EvalText, APlateauInASeriesOfFewAutocorrelationTimesIsUnreliableAndSaysWhy) {
  auto r = evaluation("reblocking", 8, true);
  r.error_reblocking = 0.0011;
  r.autocorr_walkers.tau = 4.0;
  r.autocorr_walkers.error = 0.0014;
  r.error_from_window = true;
  r.autocorr_times_in_series = 25;
  ASSERT_TRUE(r.series_too_short());
  ASSERT_FALSE(r.error_reliable());
  const std::string text = eval_text(r);
  EXPECT_TRUE(contains(text, "UNRELIABLE")) << text;
  EXPECT_TRUE(contains(text, "the 100 iterations hold only 25 autocorrelation times (τ 4.0 iterations)")) << text;
  EXPECT_TRUE(contains(text, "pooled over the walkers' own series), larger than the reblocking's ± 0.001100")) << text;
  r.autocorr_times_in_series = 60;
  EXPECT_TRUE(r.error_reliable());
  EXPECT_FALSE(contains(eval_text(r), "autocorrelation times (τ")) << eval_text(r);
  EXPECT_FALSE(evaluation("walker chains", 128, true).series_too_short());  // (their spread needs no τ)
}

// One step has no series to reblock: its autocorrelation time is unknown, printed as n/a, not nan.
TEST(EvalText, UnknownAutocorrelationTimeIsPrintedAsNotAvailable) {
  auto r = evaluation("walker chains", 128, false);
  r.stats.n = 1;
  r.steps = 1;
  r.stats.autocorr_time = std::numeric_limits<double>::quiet_NaN();
  const std::string text = eval_text(r);
  EXPECT_TRUE(contains(text, "autocorrelation time n/a iterations")) << text;
  EXPECT_FALSE(contains(text, "nan")) << text;
}

// Walkers that were not in equilibrium when the measurement began (the stationarity check) and
// walkers that hardly moved make the stated error bar unreliable, however it was found.
TEST(EvalText, ADriftingOrStuckEvaluationIsUnreliableAndSaysWhy) {
  auto drifting = evaluation("walker chains", 128, true);
  drifting.drift_first = -2.80;
  drifting.drift_last = -2.90;
  drifting.drift_z = 5.0;
  ASSERT_FALSE(drifting.error_reliable());
  std::string text = eval_text(drifting);
  EXPECT_TRUE(contains(text, "UNRELIABLE")) << text;
  EXPECT_TRUE(contains(text, "its first 20 % of steps average -2.800000, its last 50 % -2.900000, 5.0 times")) << text;
  EXPECT_FALSE(contains(text, "too few for a reblocking plateau")) << text;  // (not the reason here)
  drifting.drift_z = -3.0;  // within the noise
  EXPECT_TRUE(drifting.error_reliable());
  auto stuck = evaluation("walker chains", 128, true);
  stuck.acceptance = 0.003;
  ASSERT_FALSE(stuck.error_reliable());
  text = eval_text(stuck);
  EXPECT_TRUE(contains(text, "acceptance 0.003 at step size")) << text;
  EXPECT_TRUE(contains(text, "the walkers hardly moved")) << text;
}

// The floor note names the estimate that fell below it, the stated one (it said "the error
// estimates", while cross-checks printed above it lay above the floor: a user audit).
TEST(EvalText, TheErrorFloorNoteNamesTheEstimateThatFellBelowIt) {
  auto r = evaluation("walker chains", 128, true);
  r.error_walkers = 0.001391;
  r.error_reblocking = 0.001882;
  r.error_independent = 0.0015;
  r.stats.error = 0.0015;
  r.error_floored = true;
  const std::string text = eval_text(r);
  EXPECT_TRUE(contains(text, "note: the error from the walkers' averages (0.001391) fell below")) << text;
}

// Walkers whose own averages spread far more than the reblocking of their mean series allows do
// not mix: the evaluation is unreliable and says why (a user audit: ±0.041 against ±0.0072).
TEST(EvalText, WalkersThatDoNotMixMakeTheEvaluationUnreliable) {
  auto apart = evaluation("walker chains", 64, true);
  apart.error_walkers = 0.0413;
  apart.error_reblocking = 0.0066;
  ASSERT_TRUE(apart.walkers_apart());
  ASSERT_FALSE(apart.error_reliable());
  const std::string text = eval_text(apart);
  EXPECT_TRUE(contains(text, "UNRELIABLE")) << text;
  EXPECT_TRUE(contains(text, "the walkers do not mix: their own averages spread by ± 0.041300, 6.3 times")) << text;
  auto mixing = apart;
  mixing.error_walkers = 0.0097;
  mixing.error_reblocking = 0.0114;  // (the frozen baseline of the same audit)
  EXPECT_FALSE(mixing.walkers_apart());
  EXPECT_TRUE(mixing.error_reliable());
  auto no_plateau = apart;
  no_plateau.stats.plateau = false;  // (the reblocking error is then no yardstick)
  EXPECT_FALSE(no_plateau.walkers_apart());
}

// A reblocking cross-check well below the stated walkers' spread is said to run low, not left to
// read as a confirmation (a user audit: 1.7 times below, the spread of eight seeds' means matching
// the stated error); one close to it is printed without comment.
TEST(EvalText, AReblockingCrossCheckWellBelowTheStatedErrorIsSaidToRunLow) {
  auto low = evaluation("walker chains", 128, true);
  low.stats.error = 0.034;
  low.error_walkers = 0.034;
  low.error_reblocking = 0.020;
  ASSERT_FALSE(low.walkers_apart());
  EXPECT_TRUE(contains(eval_text(low), "(the reblocking is 1.7 times below the stated error")) << eval_text(low);
  auto close = low;
  close.error_reblocking = 0.030;
  EXPECT_FALSE(contains(eval_text(close), "times below the stated error")) << eval_text(close);
}

// A few large local energies carrying the variance (heavy tails) are warned about, with the
// variance's own uncertainty; a routine one is printed with the variance, without a warning.
TEST(EvalText, WarnsWhenAFewLargeLocalEnergiesCarryTheVariance) {
  auto r = evaluation("walker chains", 128, true);
  r.variance = 0.4;
  r.variance_rel_error = r.variance_rel_error_independent = 0.12;
  r.variance_error_widened = true;
  r.largest_share = 0.05;
  ASSERT_FALSE(r.heavy_tails());
  std::string text = eval_text(r);
  EXPECT_TRUE(contains(text, "variance 0.4 Eh² ± 12 %")) << text;
  EXPECT_FALSE(contains(text, "warning")) << text;
  EXPECT_FALSE(contains(text, "counted as independent")) << text;
  // correlation widens the variance's error, but is no tail: judged on the independent figure
  r.variance_rel_error = 0.6;
  EXPECT_FALSE(r.heavy_tails());
  r.variance_error_widened = false;  // (τ not known: said)
  EXPECT_TRUE(contains(eval_text(r), "± 60 % (samples counted as independent: τ not known)")) << eval_text(r);
  r.variance_rel_error = r.variance_rel_error_independent = 0.8;
  r.variance_error_widened = true;
  r.largest_share = 0.6;
  ASSERT_TRUE(r.heavy_tails());
  text = eval_text(r);
  EXPECT_TRUE(contains(text, "heavy tails; the largest of 12800 samples carries 60 % of it")) << text;
  EXPECT_TRUE(contains(text, "uncertain by about ± 80 %")) << text;
}

// The molecule file's reference energy is stated with the distance from it in mEh; without one, nothing.
TEST(EvalText, StatesTheReferenceEnergyAndTheDistanceFromIt) {
  auto r = evaluation("walker chains", 128, true);
  EXPECT_FALSE(contains(eval_text(r), "reference")) << eval_text(r);
  r.e_ref = -2.903724377;
  r.e_ref_source = "exact";
  const std::string text = eval_text(r);
  EXPECT_TRUE(contains(text, "reference -2.903724 Eh (exact): E − E_ref = +2.02 ± 1.40 mEh")) << text;
  EXPECT_NEAR(eval_json(r)["error_vs_ref"].get<double>(), 0.002024377, 1e-12);
  EXPECT_TRUE(eval_json(evaluation("walker chains", 128, true))["e_ref"].is_null());
}

// An energy below a rigorous lower bound on any wavefunction's is meaningless (a user audit: a diverged
// PauliNet evaluated to −8e25 Eh with exit 0 and no word).
TEST(EvalText, AnEnergyBelowTheHamiltoniansLowerBoundIsUnreliable) {
  auto r = evaluation("walker chains", 256, true);
  r.lower_bound = -4.0;  // He
  EXPECT_FALSE(r.below_lower_bound());
  EXPECT_TRUE(r.error_reliable());
  r.stats.mean = -4.0 - 2.9 * r.stats.error;  // within 3 error bars: could be noise
  EXPECT_FALSE(r.below_lower_bound());
  r.stats.mean = -4.0 - 0.19;  // within the 5 % slack: for H the bound is exact, and noise crosses it
  EXPECT_FALSE(r.below_lower_bound());
  // a few walkers near a nucleus (a cusp-less ψ) carry mean and error bar alike: not below it
  r.stats.mean = -9.0;
  r.stats.error = 10.0;
  EXPECT_FALSE(r.below_lower_bound());
  r.stats.mean = -1422.08;
  r.stats.error = 329.6;
  ASSERT_TRUE(r.below_lower_bound());
  EXPECT_FALSE(r.error_reliable());
  const std::string text = eval_text(r);
  EXPECT_TRUE(contains(text, "(UNRELIABLE: see below)")) << text;
  EXPECT_TRUE(contains(text, "warning: the energy is below -4.000000 Eh, a rigorous lower bound")) << text;
  EXPECT_TRUE(eval_json(r)["below_lower_bound"].get<bool>());
  EXPECT_DOUBLE_EQ(eval_json(r)["lower_bound"].get<double>(), -4.0);
  r.lower_bound = std::numeric_limits<double>::quiet_NaN();  // not known: nothing said
  EXPECT_FALSE(r.below_lower_bound());
}

// A burn-in shorter than the measured autocorrelation time is warned about (a user audit: a
// SPRING-trained LiH measured τ = 28 iterations of 10 MH steps after a burn-in of 50 steps and came
// out 27 mEh above the same evaluation after 1500); one of several τ is not.
TEST(EvalText, ABurnInShorterThanTheAutocorrelationTimeIsWarnedAbout) {
  auto r = evaluation("walker chains", 256, true);
  r.steps_per_iteration = 10;
  r.burn_in = 50;
  r.stats.autocorr_time = 27.76;
  ASSERT_TRUE(r.short_burn_in());
  EXPECT_FALSE(r.error_reliable());  // the walkers may not be in equilibrium: the bar does not hold the bias
  const std::string text = eval_text(r);
  EXPECT_TRUE(contains(text, "(UNRELIABLE: see below)")) << text;
  EXPECT_TRUE(contains(text, "the burn-in (50 MH steps) was shorter than the autocorrelation time (278 MH steps)")) << text;
  EXPECT_TRUE(contains(text, "eval.burn_in=1388 or more")) << text;
  EXPECT_TRUE(eval_json(r)["burn_in_short"].get<bool>());
  EXPECT_TRUE(contains(text, "(from training that has since moved it)")) << text;
  r.fresh_walkers = true;  // (walkers placed around the nuclei were said to come from training, a user audit)
  EXPECT_TRUE(contains(eval_text(r), "(not from training: placed around the nuclei, or by pretraining)")) << eval_text(r);
  r.stats.autocorr_time = 1.95;
  EXPECT_FALSE(r.short_burn_in());
  EXPECT_TRUE(r.error_reliable());
  EXPECT_FALSE(contains(eval_text(r), "burn-in")) << eval_text(r);
  r.stats.autocorr_time = std::numeric_limits<double>::quiet_NaN();  // (not known: nothing said)
  EXPECT_FALSE(r.short_burn_in());
}
