#include "train/blocking.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace nnvmc {
namespace {
double mean_of(const std::vector<double>& x) {
  double m = 0;
  for (double v : x) m += v;
  return x.empty() ? 0.0 : m / static_cast<double>(x.size());
}
}  // namespace

BlockingResult blocking_analysis(const std::vector<double>& series) {
  BlockingResult r;
  r.n = static_cast<long>(series.size());
  if (r.n == 0) return r;
  const double mean = mean_of(series);
  r.mean = mean;
  if (r.n < 2) return r;
  // Population variance s² of the blocked series at each level.
  std::vector<double> x = series, s2;
  std::vector<long> len;
  while (x.size() >= 2) {
    const long m = static_cast<long>(x.size());
    const double level_mean = mean_of(x);  // (a level that dropped an odd last value has its own)
    double v = 0;
    for (long i = 0; i < m; ++i) v += (x[i] - level_mean) * (x[i] - level_mean);
    s2.push_back(v / m);
    len.push_back(m);
    std::vector<double> next(m / 2);
    for (long i = 0; i < m / 2; ++i) next[i] = 0.5 * (x[2 * i] + x[2 * i + 1]);
    x.swap(next);
  }
  const int levels = static_cast<int>(s2.size());
  // Standard error of the mean from each level's block means.
  std::vector<double> se(levels);
  for (int j = 0; j < levels; ++j) se[j] = std::sqrt(s2[j] / std::max<long>(1, len[j] - 1));
  // Lee et al. (PRE 83, 066706 (2011)): the smallest block size B = 2^j with
  // B³ > 2 n (se_j / se_0)⁴, i.e. blocks much longer than the correlation time the level measures. (The first level that
  // passes Jonsson's lag-1 χ² test, used before, stops too early: 7–25 % low on AR(1) series of
  // evaluation length, 1σ covering the mean 52–66 % of the time; bench/results/error_bars.txt.)
  int level = -1;
  for (int j = 0; j < levels && level < 0; ++j) {
    const double ratio = se[0] > 0 ? se[j] / se[0] : 1.0;
    if (std::pow(2.0, 3 * j) > 2.0 * static_cast<double>(r.n) * std::pow(ratio, 4)) level = j;
  }
  r.plateau = level >= 0 && len[level] >= kMinPlateauBlocks;
  r.variance = s2[0] * r.n / (r.n - 1.0);
  r.naive_error = std::sqrt(s2[0] / (r.n - 1.0));
  if (!r.plateau) {
    // The series is too short for its correlation time, so every level's error is too small or
    // noise. State the largest of: level 0 (σ/√n — a Metropolis chain's energies are not
    // anticorrelated), the deepest level that still has kMinPlateauBlocks blocks, and the level
    // that met the criterion with fewer blocks, if one did (noise: two blocks gave 0.1× σ/√n).
    int deepest = 0;
    while (deepest + 1 < levels && len[deepest + 1] >= kMinPlateauBlocks) ++deepest;
    int best = se[deepest] > se[0] ? deepest : 0;
    if (level >= 0 && se[level] > se[best]) best = level;
    level = best;
  }
  r.block_level = level;
  r.error = se[level];
  r.autocorr_time = r.naive_error > 0 ? std::pow(r.error / r.naive_error, 2) : 1.0;
  return r;
}

double batch_means_error(const std::vector<double>& series) {
  const long n = static_cast<long>(series.size());
  if (n < 4) return std::numeric_limits<double>::quiet_NaN();  // too short to say (0 read as exact)
  const long size = static_cast<long>(std::sqrt(static_cast<double>(n)));
  const long batches = n / size;
  std::vector<double> means(batches, 0.0);
  for (long b = 0; b < batches; ++b) {
    for (long i = 0; i < size; ++i) means[b] += series[b * size + i];
    means[b] /= static_cast<double>(size);
  }
  const double m = mean_of(means);
  double v = 0;
  for (double x : means) v += (x - m) * (x - m);
  return std::sqrt(v / (batches - 1.0) / batches);
}

AutocorrEstimate autocorrelation_estimate(const std::vector<double>& series) {
  return pooled_autocorrelation_estimate({series});
}

AutocorrEstimate pooled_autocorrelation_estimate(const std::vector<std::vector<double>>& chains) {
  AutocorrEstimate a;
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  const long k = static_cast<long>(chains.size());
  const long n = k > 0 ? static_cast<long>(chains[0].size()) : 0;
  const bool equal = std::all_of(chains.begin(), chains.end(), [n](const auto& c) { return static_cast<long>(c.size()) == n; });
  const double total = static_cast<double>(k) * static_cast<double>(n);
  // too short to say (uncorrelated series of 20 gave τ ≈ 0.5): unknown, not exact
  if (!equal || total < kMinWindowSeries) {
    a.tau = a.error = nan;
    return a;
  }
  double m = 0;
  for (const auto& c : chains) m += mean_of(c) * static_cast<double>(n) / total;
  double c0 = 0;
  for (const auto& c : chains)
    for (double x : c) c0 += (x - m) * (x - m);
  c0 /= total;
  if (c0 <= 0) return a;
  double tau = 1;
  long w = 1;
  bool converged = false;
  for (; w < n / 2; ++w) {
    double c = 0;
    for (const auto& x : chains)
      for (long i = 0; i + w < n; ++i) c += (x[i] - m) * (x[i + w] - m);
    tau += 2 * c / total / c0;
    if (static_cast<double>(w) >= 5.0 * tau) {
      converged = true;
      break;
    }
  }
  a.window = static_cast<int>(w);
  if (!converged || !(tau > 0)) {  // the series ended before the window did: no estimate (one
    // stopped at n/2 understated the error of short uncorrelated series by 40 %)
    a.tau = a.error = nan;
    return a;
  }
  a.tau = tau;
  a.error = std::sqrt(a.tau * c0 * total / (total - 1.0) / total);
  return a;
}

double walker_chains_error(const std::vector<double>& chain_means) {
  const long w = static_cast<long>(chain_means.size());
  if (w < 2) return std::numeric_limits<double>::quiet_NaN();
  const double m = mean_of(chain_means);
  double v = 0;
  for (double x : chain_means) v += (x - m) * (x - m);
  return std::sqrt(v / (w - 1.0) / static_cast<double>(w));
}

}  // namespace nnvmc
