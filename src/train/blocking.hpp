#pragma once
/// @file blocking.hpp
/// Error bars of correlated Monte Carlo series by reblocking (Flyvbjerg & Petersen,
/// J. Chem. Phys. 91, 461 (1989)), with the block size chosen automatically
/// (Jonsson, Phys. Rev. E 98, 043304 (2018): first level where the blocked series
/// looks uncorrelated by its lag-1 autocorrelation test statistic).
#include <vector>

namespace nnvmc {

/// Result of a blocking analysis of a series x_1..x_n.
struct BlockingResult {
  double mean = 0;           ///< sample mean
  double error = 0;          ///< standard error of the mean, corrected for correlation
  double naive_error = 0;    ///< σ/√n, as if uncorrelated
  double variance = 0;       ///< sample variance of the series
  double autocorr_time = 1;  ///< integrated autocorrelation time ≈ (error / naive_error)²
  int block_level = 0;       ///< number of halvings used (block size 2^level)
  long n = 0;                ///< series length
};

/// Reblocking analysis. Requires at least 2 values (error is 0 otherwise).
BlockingResult blocking_analysis(const std::vector<double>& series);

}  // namespace nnvmc
