#pragma once
/// @file sample_moments.hpp
/// The first four moments of an evaluation's local energies, for how well its variance (and with
/// it the error bar) is known. A trial wavefunction that is not exact has local energies with
/// power-law tails (near its nodes, and near nuclei without a cusp: P(|E_L| > t) ~ t⁻³), so the
/// variance exists but its own estimate converges slowly and is carried by a few large values
/// (Trail, Phys. Rev. E 77, 016703 (2008)). A short run that has seen few of them understates both.
#include <cstdint>
#include <limits>

namespace nnvmc {

/// The variance of the local energy is called uncertain (heavy tails) above this relative
/// standard error: the error bar (∝ √variance) is then itself uncertain by about half as much.
/// Gaussian samples give √(2/N): 0.014 at 10⁴ samples. Evaluations of trained and of pretrained
/// (cusp-less) wavefunctions at 6400 samples gave 0.07–0.3, and one large value often carries a
/// tenth to a third of the variance: routine, and printed with the variance, not a warning.
constexpr double kMaxVarianceRelError = 0.5;

/// Below this many values the fourth moment says nothing of the variance's error (two values
/// give m₄ = m₂² exactly: "± 0 %", a user audit): variance_rel_error is NaN.
constexpr std::int64_t kMinValuesForVarianceError = 10;

/// Power sums about a fixed shift (the first batch's mean), so the central moments keep their
/// digits where the mean is large against the spread (−100 Eh ± 0.1).
class SampleMoments {
 public:
  /// `values` [n] finite local energies of one step
  void add(const double* values, std::int64_t n);

  std::int64_t count() const { return n_; }
  double mean() const;
  /// population variance Σ(x − x̄)² / n; NaN below 2 values
  double variance() const;
  /// Relative standard error of variance(): √((m₄ − m₂²) / n) / m₂ from the central moments m₂,
  /// m₄, as if the values were independent (correlation only raises it); NaN below
  /// kMinValuesForVarianceError values or with zero variance.
  double variance_rel_error() const;
  /// The share of n·variance() that the value farthest from the mean carries (heavy tails: one
  /// value can carry most of it; Gaussian samples: about 2 ln n / n); NaN below 2 values.
  double largest_share() const;

 private:
  bool shifted_ = false;
  double shift_ = 0;
  double s1_ = 0, s2_ = 0, s3_ = 0, s4_ = 0;  ///< Σ(x − shift)^k
  double lo_ = std::numeric_limits<double>::infinity(), hi_ = -std::numeric_limits<double>::infinity();
  std::int64_t n_ = 0;
};

}  // namespace nnvmc
