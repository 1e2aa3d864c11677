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
