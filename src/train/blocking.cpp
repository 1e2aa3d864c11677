#include "train/blocking.hpp"

#include <cmath>

namespace nnvmc {
namespace {
// 99% quantiles of χ² with k = 1..30 degrees of freedom (Jonsson's criterion).
constexpr double kChi2q99[30] = {6.634897, 9.210340, 11.344867, 13.276704, 15.086272, 16.811894,
                                 18.475307, 20.090235, 21.665994, 23.209251, 24.724970, 26.216967,
                                 27.688250, 29.141238, 30.577914, 31.999927, 33.408664, 34.805306,
                                 36.190869, 37.566235, 38.932173, 40.289360, 41.638398, 42.979820,
                                 44.314105, 45.641683, 46.962942, 48.278236, 49.587884, 50.892181};
double chi2q99(int k) { return k <= 30 ? kChi2q99[k - 1] : k + 2.326 * std::sqrt(2.0 * k); }
}  // namespace

BlockingResult blocking_analysis(const std::vector<double>& series) {
  BlockingResult r;
  r.n = static_cast<long>(series.size());
  if (r.n == 0) return r;
  double mean = 0;
  for (double v : series) mean += v;
  mean /= r.n;
  r.mean = mean;
  if (r.n < 2) return r;
  // Statistics per level d of the blocked series (population variance s², lag-1 γ).
  std::vector<double> x = series, s2, gamma;
  std::vector<long> len;
  while (x.size() >= 2) {
    const long m = static_cast<long>(x.size());
    double v = 0, g = 0;
    for (long i = 0; i < m; ++i) v += (x[i] - mean) * (x[i] - mean);
    for (long i = 0; i + 1 < m; ++i) g += (x[i] - mean) * (x[i + 1] - mean);
    s2.push_back(v / m);
    gamma.push_back(g / m);
    len.push_back(m);
    std::vector<double> next(m / 2);
    for (long i = 0; i < m / 2; ++i) next[i] = 0.5 * (x[2 * i] + x[2 * i + 1]);
    x.swap(next);
  }
  const int levels = static_cast<int>(s2.size());
  // M_j = Σ_{i>=j} n_i (γ_i/s²_i)² 2^{i+1}... uses Jonsson's statistic with the 2^(i+1) weight.
  std::vector<double> M(levels, 0.0);
  for (int j = levels - 1; j >= 0; --j) {
    const double ratio = s2[j] > 0 ? gamma[j] / s2[j] : 0.0;
    M[j] = (j + 1 < levels ? M[j + 1] : 0.0) + len[j] * ratio * ratio;
  }
  int level = levels - 1;
  for (int j = 0; j < levels; ++j)
    if (M[j] < chi2q99(levels - j)) {
      level = j;
      break;
    }
  r.block_level = level;
  r.variance = s2[0] * r.n / (r.n - 1.0);
  r.naive_error = std::sqrt(s2[0] / (r.n - 1.0));
  r.error = std::sqrt(s2[level] / std::max<long>(1, len[level] - 1));
  r.autocorr_time = r.naive_error > 0 ? std::pow(r.error / r.naive_error, 2) : 1.0;
  return r;
}

}  // namespace nnvmc
