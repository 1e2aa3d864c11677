#pragma once
/// @file diis.hpp
/// Pulay DIIS on amplitude vectors with error vectors e = t_new − t_old.
#include <torch/types.h>

#include <deque>
#include <vector>

namespace nnvmc::ccsd {

/// Keeps the last `size` (vector, error) pairs and extrapolates. A vector is a list of tensors
/// (e.g. {t1, t2}); their overlaps are kept, so each step costs one dot product per stored
/// vector, and the storage of the oldest pair is reused for the newest.
class Diis {
 public:
  explicit Diis(int size) : size_(size) {}
  /// Adds (t, e) and overwrites t with Σ c_k t_k, Σ c_k = 1 minimising |Σ c_k e_k|; leaves t
  /// as it is while fewer than 2 pairs are stored (or size ≤ 0).
  void extrapolate(std::vector<torch::Tensor>& t, const std::vector<torch::Tensor>& e);

 private:
  int size_;
  std::deque<std::vector<torch::Tensor>> ts_, es_;
  std::deque<std::vector<double>> overlap_;  ///< overlap_[i][j] = e_i·e_j for j ≤ i
};

}  // namespace nnvmc::ccsd
