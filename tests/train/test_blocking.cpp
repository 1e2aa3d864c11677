#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "train/blocking.hpp"

using namespace nnvmc;

TEST(Blocking, UncorrelatedSeriesHasNaiveErrorAndUnitAutocorrelation) {
  std::mt19937_64 rng(1);
  std::normal_distribution<double> n(0.0, 1.0);
  std::vector<double> x(1 << 14);
  for (auto& v : x) v = n(rng);
  const auto r = blocking_analysis(x);
  EXPECT_NEAR(r.error, 1.0 / std::sqrt(double(x.size())), 0.2 / std::sqrt(double(x.size())));
  EXPECT_NEAR(r.autocorr_time, 1.0, 0.5);
}

TEST(Blocking, AR1SeriesRecoversTheIntegratedAutocorrelationTime) {
  // x_t = φ x_{t-1} + ε_t: τ = (1 + φ) / (1 − φ) = 19 for φ = 0.9.
  const double phi = 0.9;
  std::mt19937_64 rng(7);
  std::normal_distribution<double> n(0.0, 1.0);
  std::vector<double> x(1 << 17);
  double v = 0;
  for (auto& xi : x) xi = v = phi * v + n(rng);
  const auto r = blocking_analysis(x);
  const double tau = (1 + phi) / (1 - phi);
  EXPECT_NEAR(r.autocorr_time, tau, 0.25 * tau);
  // true standard error of the mean: sqrt(τ σ² / n) with σ² = 1/(1−φ²)
  const double se = std::sqrt(tau / (1 - phi * phi) / x.size());
  EXPECT_NEAR(r.error, se, 0.15 * se);
}

namespace {
/// x_t = φ x_{t−1} + ε_t, ε ~ N(0, 1), started from the stationary distribution (mean 0).
std::vector<double> ar1(double phi, long n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0.0, 1.0);
  std::vector<double> x(n);
  double v = g(rng) / std::sqrt(1 - phi * phi);
  for (auto& xi : x) xi = v = phi * v + g(rng);
  return x;
}
/// Exact standard error of the mean of n AR(1) values (unit innovations).
double ar1_standard_error(double phi, long n) {
  // Var(mean) = σ²/n² Σ_{|k|<n} (n − |k|) φ^|k|, σ² = 1/(1 − φ²).
  double s = n;
  for (long k = 1; k < n; ++k) s += 2.0 * (n - k) * std::pow(phi, k);
  return std::sqrt(s / (1 - phi * phi)) / n;
}
}  // namespace

// A hundred independent AR(1) series of the length of a typical evaluation (τ = 9): the stated
// 1σ error bars of all three estimators agree with the exact one on average and cover the true
// mean (0) at about the nominal 68 % rate (at least 60 % asked).
TEST(Blocking, StatedErrorBarsCoverTheTrueMeanOfAR1SeriesAtTheNominalRate) {
  const double phi = 0.8;
  const long n = 2000;
  const double exact = ar1_standard_error(phi, n);
  int covered_blocking = 0, covered_batch = 0, covered_autocorr = 0;
  double mean_blocking = 0, mean_batch = 0, mean_autocorr = 0;
  const int repeats = 100;
  for (int i = 0; i < repeats; ++i) {
    const auto x = ar1(phi, n, 100 + i);
    const auto b = blocking_analysis(x);
    const double bm = batch_means_error(x);
    const auto ac = autocorrelation_estimate(x);
    EXPECT_TRUE(b.plateau) << "repeat " << i;
    covered_blocking += std::abs(b.mean) <= b.error;
    covered_batch += std::abs(b.mean) <= bm;
    covered_autocorr += std::abs(b.mean) <= ac.error;
    mean_blocking += b.error / repeats;
    mean_batch += bm / repeats;
    mean_autocorr += ac.error / repeats;
  }
  EXPECT_GE(covered_blocking, 60) << covered_blocking;
  EXPECT_GE(covered_batch, 60) << covered_batch;
  EXPECT_GE(covered_autocorr, 60) << covered_autocorr;
  EXPECT_NEAR(mean_blocking, exact, 0.1 * exact);
  EXPECT_NEAR(mean_batch, exact, 0.1 * exact);
  EXPECT_NEAR(mean_autocorr, exact, 0.1 * exact);
}

TEST(Blocking, SeriesTooShortForItsCorrelationHasNoPlateauAndSaysSo) {
  // τ ≈ 400 on 1000 values: no block size with 16 or more blocks is uncorrelated.
  const auto x = ar1(0.995, 1000, 3);
  const auto b = blocking_analysis(x);
  EXPECT_FALSE(b.plateau);
  EXPECT_LT(b.error, ar1_standard_error(0.995, 1000));  // what it can state is too small
  const auto white = ar1(0.0, 1000, 3);
  EXPECT_TRUE(blocking_analysis(white).plateau);
}

// A series too short for a plateau used to state the error of the level that met the block-size
// criterion however few blocks it had: five values whose two blocks of two happen to agree gave
// an error bar of 0 (a 5-step evaluation of He with 8 walkers stated 0.04× σ/√n and τ = 0.001).
// Without a plateau the stated error is never below σ/√n, and τ never below 1.
TEST(Blocking, ErrorBarWithoutPlateauIsNeverBelowTheNaiveOne) {
  const auto agreeing_blocks = blocking_analysis({1.0, -1.0, 1.0, -1.0, 0.5});
  EXPECT_FALSE(agreeing_blocks.plateau);
  EXPECT_GT(agreeing_blocks.naive_error, 0.0);
  EXPECT_DOUBLE_EQ(agreeing_blocks.error, agreeing_blocks.naive_error);
  EXPECT_DOUBLE_EQ(agreeing_blocks.autocorr_time, 1.0);
  int without_plateau = 0;
  for (long n = 3; n < 200; ++n) {
    for (std::uint64_t seed = 0; seed < 20; ++seed) {
      const auto b = blocking_analysis(ar1(n % 2 ? 0.0 : 0.9, n, 100 * n + seed));
      if (b.plateau) continue;
      ++without_plateau;
      EXPECT_GE(b.error, b.naive_error) << "n " << n << " seed " << seed;
      EXPECT_GE(b.autocorr_time, 1.0) << "n " << n << " seed " << seed;
    }
  }
  EXPECT_GT(without_plateau, 1000);  // most short series have no plateau: the loop tested something
}

TEST(Blocking, AutocorrelationEstimateRecoversTauOfALongAR1Series) {
  const double phi = 0.9, tau = (1 + phi) / (1 - phi);
  const auto a = autocorrelation_estimate(ar1(phi, 1 << 16, 5));
  EXPECT_NEAR(a.tau, tau, 0.15 * tau);
  EXPECT_GE(a.window, 5 * a.tau - 1);
}

// Eight independent AR(1) chains (τ = 9) of 200 steps each: their autocorrelation pooled over
// the chains reads τ to 15 %, and the error of the grand mean to 15 % of the exact one; chains of
// unequal length or too few values give none.
TEST(Blocking, PooledAutocorrelationOfSeveralChainsRecoversTauAndTheErrorOfTheirMean) {
  const double phi = 0.8, tau = (1 + phi) / (1 - phi);
  double tau_sum = 0, ratio_sum = 0;
  const int repeats = 20;
  for (int k = 0; k < repeats; ++k) {
    std::vector<std::vector<double>> chains;
    for (int w = 0; w < 8; ++w) chains.push_back(ar1(phi, 200, 1000 + 8 * k + w));
    const AutocorrEstimate a = pooled_autocorrelation_estimate(chains);
    ASSERT_TRUE(std::isfinite(a.tau));
    tau_sum += a.tau / repeats;
    ratio_sum += a.error / (ar1_standard_error(phi, 200) / std::sqrt(8.0)) / repeats;
  }
  EXPECT_NEAR(tau_sum, tau, 0.15 * tau);
  EXPECT_NEAR(ratio_sum, 1.0, 0.15);
  EXPECT_TRUE(std::isnan(pooled_autocorrelation_estimate({ar1(phi, 200, 1), ar1(phi, 199, 2)}).tau));
  EXPECT_TRUE(std::isnan(pooled_autocorrelation_estimate({ar1(phi, 40, 1), ar1(phi, 40, 2)}).tau));  // 80 values
}

// Sixty-four independent AR(1) chains of only 8 steps each (τ = 9, so no reblocking plateau):
// the spread of the chains' own averages gives the error of the grand mean, on average the exact
// one, and its 1σ bar covers the true mean (0) at about the nominal rate.
TEST(Blocking, WalkerChainsErrorOfShortIndependentChainsIsTheExactOne) {
  const double phi = 0.8;
  const long steps = 8, chains = 64;
  const double exact = ar1_standard_error(phi, steps) / std::sqrt(double(chains));
  int covered = 0, covered_reblocking = 0;
  double mean_error = 0;
  const int repeats = 200;
  for (int i = 0; i < repeats; ++i) {
    std::vector<double> chain_means(chains), step_means(steps, 0.0);
    for (long w = 0; w < chains; ++w) {
      const auto x = ar1(phi, steps, 1000 * i + w);
      for (long t = 0; t < steps; ++t) step_means[t] += x[t] / chains;
      for (double v : x) chain_means[w] += v / steps;
    }
    const double err = walker_chains_error(chain_means);
    const auto b = blocking_analysis(step_means);
    EXPECT_FALSE(b.plateau);
    covered += std::abs(b.mean) <= err;
    covered_reblocking += std::abs(b.mean) <= b.error;
    mean_error += err / repeats;
  }
  std::printf("[ info     ] 1σ coverage of 200: walker chains %d, reblocking of the step means %d\n", covered,
              covered_reblocking);
  EXPECT_NEAR(mean_error, exact, 0.05 * exact);
  EXPECT_GE(covered, 124);  // 68 % expected; ≥ 62 %
  EXPECT_LT(covered_reblocking, covered);
  EXPECT_TRUE(std::isnan(walker_chains_error({1.0})));
}

// Sokal's window on short or window-less series gives no estimate rather than a small one: on 20
// uncorrelated values it used to stop with τ ≈ 0.5 (error bars 0.6× the true ones).
TEST(Blocking, AutocorrelationEstimateOfATooShortSeriesIsUnknown) {
  const auto short_white = ar1(0.0, 20, 11);
  EXPECT_TRUE(std::isnan(autocorrelation_estimate(short_white).error));
  std::vector<double> drift(400);  // correlated over its whole length: no window W ≥ 5τ(W) below n/2
  for (std::size_t i = 0; i < drift.size(); ++i) drift[i] = 0.01 * double(i);
  const auto a = autocorrelation_estimate(drift);
  EXPECT_TRUE(std::isnan(a.tau));
  EXPECT_TRUE(std::isnan(a.error));
}
