// The moments an evaluation keeps of its local energies: the variance, and how well it is known
// when a few large values carry it (heavy tails).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "train/sample_moments.hpp"

using namespace nnvmc;

namespace {
/// The central moment of order k, two passes.
double central_moment(const std::vector<double>& x, int k) {
  double mean = 0;
  for (double v : x) mean += v;
  mean /= double(x.size());
  double m = 0;
  for (double v : x) m += std::pow(v - mean, k);
  return m / double(x.size());
}

SampleMoments moments_of(const std::vector<double>& x, std::size_t batch) {
  SampleMoments m;
  for (std::size_t i = 0; i < x.size(); i += batch)
    m.add(x.data() + i, static_cast<std::int64_t>(std::min(batch, x.size() - i)));
  return m;
}
}  // namespace

// Energies of −100 Eh spread by 0.01 keep their variance's digits (power sums about the first
// batch's mean), added in batches as the evaluation adds its steps.
TEST(SampleMoments, MatchTwoPassMomentsOfValuesFarFromZero) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> noise(0.0, 0.01);
  std::vector<double> x(5000);
  for (auto& v : x) v = -100.0 + noise(rng) + (noise(rng) > 0.02 ? 0.3 : 0.0);  // skewed
  const auto m = moments_of(x, 64);
  const double m2 = central_moment(x, 2), m4 = central_moment(x, 4);
  EXPECT_EQ(m.count(), 5000);
  double sum = 0;
  for (double v : x) sum += v;
  EXPECT_NEAR(m.mean(), sum / 5000, 1e-11);
  EXPECT_NEAR(m.variance() / m2, 1.0, 1e-9);
  EXPECT_NEAR(m.variance_rel_error(), std::sqrt((m4 - m2 * m2) / 5000) / m2, 1e-6 * m.variance_rel_error());
}

// Gaussian samples: the variance's relative standard error is √(2/N), far below the threshold,
// and the largest value carries about 2 ln N / N of it.
TEST(SampleMoments, GaussianSamplesHaveAWellKnownVariance) {
  std::mt19937_64 rng(11);
  std::normal_distribution<double> normal(-2.9, 0.1);
  std::vector<double> x(20000);
  for (auto& v : x) v = normal(rng);
  const auto m = moments_of(x, 128);
  EXPECT_NEAR(m.variance_rel_error(), std::sqrt(2.0 / 20000), 0.1 * std::sqrt(2.0 / 20000));
  EXPECT_LT(m.largest_share(), 4 * std::log(20000.0) / 20000);
  EXPECT_LT(m.variance_rel_error(), kMaxVarianceRelError);
}

// One value far out carries most of the variance: the estimate is not to be trusted.
TEST(SampleMoments, OneLargeValueCarriesTheVarianceAndMakesItUncertain) {
  std::vector<double> x(1000);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = -1.0 + (i % 2 == 0 ? 0.05 : -0.05);
  x[500] = -40.0;  // a walker near a node
  const auto m = moments_of(x, 100);
  EXPECT_GT(m.largest_share(), 0.9);
  EXPECT_GT(m.variance_rel_error(), kMaxVarianceRelError);
}

// Below two values, or without spread, there is nothing to say.
TEST(SampleMoments, UndefinedBelowTwoValuesOrWithoutSpread) {
  SampleMoments one;
  const double v = -1.0;
  one.add(&v, 1);
  EXPECT_TRUE(std::isnan(one.variance()));
  EXPECT_TRUE(std::isnan(one.variance_rel_error()));
  const std::vector<double> same(10, -1.0);
  const auto flat = moments_of(same, 3);
  EXPECT_EQ(flat.variance(), 0.0);
  EXPECT_TRUE(std::isnan(flat.variance_rel_error()));
  EXPECT_TRUE(std::isnan(flat.largest_share()));
  // two values give m4 = m2^2 exactly: no error of the variance is known ("± 0 %" was printed)
  const std::vector<double> two = {-1.0, -1.2};
  EXPECT_GT(moments_of(two, 2).variance(), 0.0);
  EXPECT_TRUE(std::isnan(moments_of(two, 2).variance_rel_error()));
  std::vector<double> ten;
  for (int i = 0; i < kMinValuesForVarianceError; ++i) ten.push_back(-1.0 - 0.01 * i * i);
  EXPECT_TRUE(std::isfinite(moments_of(ten, 5).variance_rel_error()));
}
