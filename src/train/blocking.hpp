#pragma once
/// @file blocking.hpp
/// Error bars of correlated Monte Carlo series by reblocking (Flyvbjerg & Petersen,
/// J. Chem. Phys. 91, 461 (1989)), with the block size chosen automatically as in Lee, Conduit,
/// Nemec, López Ríos & Drummond, Phys. Rev. E 83, 066706 (2011) (the smallest block size B with
/// B³ > 2n(σ_B/σ_1)⁴), and two independent cross-checks: batch means and the integrated
/// autocorrelation time with Sokal's window.
#include <vector>

namespace nnvmc {

/// Blocks at least this many make a reblocking error bar (its own relative error is about
/// 1/√(2(blocks − 1)), 27 % at 8 blocks): a level with fewer blocks never counts as a plateau.
constexpr long kMinPlateauBlocks = 8;

/// Result of a blocking analysis of a series x_1..x_n.
struct BlockingResult {
  double mean = 0;           ///< sample mean
  double error = 0;          ///< standard error of the mean, corrected for correlation
  double naive_error = 0;    ///< σ/√n, as if uncorrelated
  double variance = 0;       ///< sample variance of the series
  double autocorr_time = 1;  ///< integrated autocorrelation time ≈ (error / naive_error)²
  int block_level = 0;       ///< number of halvings used (block size 2^level)
  long n = 0;                ///< series length
  /// True when the block-size criterion was met at a level with at least kMinPlateauBlocks
  /// blocks. False: the series is too short for its correlation time; `error` (and block_level)
  /// is then the largest of three levels' errors — level 0 (σ/√n), the deepest level with
  /// kMinPlateauBlocks blocks, and the level that met the criterion with fewer blocks if one did —
  /// and still likely too small: measure longer.
  bool plateau = false;
};

/// Reblocking analysis. Requires at least 2 values (error is 0 otherwise).
BlockingResult blocking_analysis(const std::vector<double>& series);

/// Standard error of the mean from non-overlapping batch means, ⌊√n⌋ values per batch
/// (the trailing remainder is dropped). NaN for fewer than 4 values.
double batch_means_error(const std::vector<double>& series);

/// Integrated autocorrelation time τ = 1 + 2 Σ_{t=1}^{W} ρ(t) with Sokal's automatic window (the
/// smallest W ≥ 5τ(W)), and the standard error √(τ s² / n) it implies. NaN (both) for fewer than
/// kMinWindowSeries values or when no window below n/2 satisfies the condition: too short to say.
constexpr long kMinWindowSeries = 100;
struct AutocorrEstimate {
  double tau = 1;    ///< integrated autocorrelation time (in series steps); NaN when too short
  double error = 0;  ///< standard error of the mean; NaN when too short
  int window = 0;    ///< W
};
AutocorrEstimate autocorrelation_estimate(const std::vector<double>& series);

/// The same from several independent chains of one Markov process (the walkers, each its own
/// series of equal length): the autocorrelation function averaged over the chains (deviations
/// from the grand mean, so chains that keep apart widen it), τ from Sokal's window on it, and
/// the standard error √(τ s² / (chains · n)) of the grand mean. Each chain adds its own reading
/// of ρ(t), so τ is far less noisy than from the chains' averaged series (8 walkers × 200 steps:
/// the averaged series' τ scattered enough that its low readings made error bars 1.5× too
/// small, a user audit). NaN (both) for fewer than kMinWindowSeries values in all, unequal
/// lengths, or no window below n/2.
AutocorrEstimate pooled_autocorrelation_estimate(const std::vector<std::vector<double>>& chains);

/// Standard error of the grand mean from W independent Markov chains (the walkers): the spread of
/// each chain's time average, √(Σ(m_w − m̄)² / (W(W − 1))), whatever the chains' correlation
/// time and however short they are, provided they started in equilibrium. NaN for fewer than 2.
/// @param chain_means the time average of each chain (W values)
double walker_chains_error(const std::vector<double>& chain_means);

}  // namespace nnvmc
