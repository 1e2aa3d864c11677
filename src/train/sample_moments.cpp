#include "train/sample_moments.hpp"

#include <algorithm>
#include <cmath>

namespace nnvmc {

void SampleMoments::add(const double* values, std::int64_t n) {
  if (n <= 0) return;
  if (!shifted_) {
    double sum = 0;
    for (std::int64_t i = 0; i < n; ++i) sum += values[i];
    shift_ = sum / static_cast<double>(n);
    shifted_ = true;
  }
  for (std::int64_t i = 0; i < n; ++i) {
    const double d = values[i] - shift_, d2 = d * d;
    s1_ += d;
    s2_ += d2;
    s3_ += d2 * d;
    s4_ += d2 * d2;
    lo_ = std::min(lo_, values[i]);
    hi_ = std::max(hi_, values[i]);
  }
  n_ += n;
}

double SampleMoments::mean() const {
  return n_ > 0 ? shift_ + s1_ / static_cast<double>(n_) : std::numeric_limits<double>::quiet_NaN();
}

double SampleMoments::variance() const {
  if (n_ < 2) return std::numeric_limits<double>::quiet_NaN();
  const double c = s1_ / static_cast<double>(n_);
  return std::max(s2_ / static_cast<double>(n_) - c * c, 0.0);
}

double SampleMoments::variance_rel_error() const {
  const double m2 = variance();
  if (!(m2 > 0) || n_ < kMinValuesForVarianceError) return std::numeric_limits<double>::quiet_NaN();
  const double n = static_cast<double>(n_), c = s1_ / n;
  // the fourth central moment from the power sums about the shift
  const double m4 = s4_ / n - 4 * c * s3_ / n + 6 * c * c * s2_ / n - 3 * c * c * c * c;
  return std::sqrt(std::max(m4 - m2 * m2, 0.0) / n) / m2;
}

double SampleMoments::largest_share() const {
  const double m2 = variance();
  if (!(m2 > 0)) return std::numeric_limits<double>::quiet_NaN();
  const double d = std::max(hi_ - mean(), mean() - lo_);
  return d * d / (m2 * static_cast<double>(n_));
}

}  // namespace nnvmc
