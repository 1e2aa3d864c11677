#pragma once
/// @file diis.hpp
/// Pulay's direct inversion in the iterative subspace (DIIS) for SCF Fock matrices.
#include <Eigen/Dense>

#include <deque>
#include <vector>

namespace nnvmc::scf {

/// Extrapolates Fock matrices from a history of (Fock, error) pairs: minimises
/// |Σ c_i e_i|² subject to Σ c_i = 1 and returns Σ c_i F_i. Several matrices per entry
/// (UHF α and β) share one set of coefficients.
class Diis {
 public:
  /// `max_size`: number of stored iterations (older ones are dropped).
  explicit Diis(int max_size = 8) : max_size_(max_size) {}

  /// Adds one iteration and returns the extrapolated Fock matrices (same count as `fock`).
  /// With a single stored entry, returns `fock` unchanged. Drops the oldest entries while
  /// the DIIS system is ill-conditioned.
  std::vector<Eigen::MatrixXd> extrapolate(const std::vector<Eigen::MatrixXd>& fock,
                                           const std::vector<Eigen::MatrixXd>& error);

  void reset() { fock_.clear(); error_.clear(); }   ///< forgets the history
  int size() const { return static_cast<int>(fock_.size()); }  ///< stored entries

 private:
  int max_size_;
  std::deque<std::vector<Eigen::MatrixXd>> fock_;
  std::deque<std::vector<Eigen::MatrixXd>> error_;
};

}  // namespace nnvmc::scf
