#pragma once
/// @file diis.hpp
/// Pulay DIIS on amplitude vectors with error vectors e = t_new − t_old.
#include <torch/types.h>

#include <vector>

namespace nnvmc::ccsd {

/// Keeps the last `size` (vector, error) pairs and extrapolates. A vector is a list of tensors
/// (e.g. {t1, t2}); each is stored as a row of a preallocated [size, numel] matrix (slots reused
/// round-robin), so a step is one copy per pair, one GEMV for the new overlaps (E·e) and one for
/// the extrapolation (Tᵀc), not one pass per stored vector.
class Diis {
 public:
  explicit Diis(int size) : size_(size) {}
  /// Adds (t, e) and overwrites t with Σ c_k t_k, Σ c_k = 1 minimising |Σ c_k e_k|; leaves t
  /// as it is while fewer than 2 pairs are stored (or size ≤ 0).
  void extrapolate(std::vector<torch::Tensor>& t, const std::vector<torch::Tensor>& e);

 private:
  int size_;
  int stored_ = 0;                    ///< pairs stored (≤ size_)
  int next_ = 0;                      ///< slot the next pair goes to
  std::vector<torch::Tensor> t_, e_;  ///< per component: [size, numel] rows by slot
  std::vector<std::vector<double>> overlap_;  ///< [size][size] e_i·e_j by slot
};

}  // namespace nnvmc::ccsd
