#pragma once
/// @file diis.hpp
/// Pulay DIIS on amplitude vectors with error vectors e = t_new − t_old.
#include <torch/types.h>

#include <deque>

namespace nnvmc::ccsd {

/// Keeps the last `size` (vector, error) pairs and extrapolates.
class Diis {
 public:
  explicit Diis(int size) : size_(size) {}
  /// Adds (t, e) (flat vectors) and returns the extrapolated vector Σ c_k t_k with
  /// Σ c_k = 1 minimising |Σ c_k e_k|; returns t while fewer than 2 pairs are stored.
  torch::Tensor extrapolate(const torch::Tensor& t, const torch::Tensor& e);

 private:
  int size_;
  std::deque<torch::Tensor> ts_, es_;
};

}  // namespace nnvmc::ccsd
