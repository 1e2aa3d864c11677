/// @file diis.cpp
/// DIIS extrapolation.
#include "scf/diis.hpp"

#include <cmath>

namespace nnvmc::scf {

std::vector<Eigen::MatrixXd> Diis::extrapolate(const std::vector<Eigen::MatrixXd>& fock,
                                               const std::vector<Eigen::MatrixXd>& error) {
  fock_.push_back(fock);
  error_.push_back(error);
  while (static_cast<int>(fock_.size()) > max_size_) {
    fock_.pop_front();
    error_.pop_front();
  }
  while (fock_.size() > 1) {
    const int m = static_cast<int>(fock_.size());
    // B_ij = Σ_channels ⟨e_i, e_j⟩, bordered by the constraint row/column.
    Eigen::MatrixXd B = Eigen::MatrixXd::Zero(m + 1, m + 1);
    for (int i = 0; i < m; ++i)
      for (int j = 0; j <= i; ++j) {
        double dot = 0;
        for (std::size_t c = 0; c < error_[i].size(); ++c) dot += error_[i][c].cwiseProduct(error_[j][c]).sum();
        B(i, j) = B(j, i) = dot;
      }
    // Scale the error block to order one so the bordered system is well conditioned.
    const double scale = B.topLeftCorner(m, m).diagonal().maxCoeff();
    if (scale > 0) B.topLeftCorner(m, m) /= scale;
    B.row(m).head(m).setConstant(-1.0);
    B.col(m).head(m).setConstant(-1.0);
    Eigen::VectorXd rhs = Eigen::VectorXd::Zero(m + 1);
    rhs(m) = -1.0;
    Eigen::FullPivLU<Eigen::MatrixXd> lu(B);
    if (lu.rcond() < 1e-14 && m > 2) {  // nearly linearly dependent errors: drop the oldest
      fock_.pop_front();
      error_.pop_front();
      continue;
    }
    const Eigen::VectorXd c = lu.solve(rhs);
    if (!c.allFinite()) {
      fock_.pop_front();
      error_.pop_front();
      continue;
    }
    std::vector<Eigen::MatrixXd> out(fock.size());
    for (std::size_t ch = 0; ch < fock.size(); ++ch) {
      out[ch] = Eigen::MatrixXd::Zero(fock[ch].rows(), fock[ch].cols());
      for (int i = 0; i < m; ++i) out[ch] += c(i) * fock_[i][ch];
    }
    return out;
  }
  return fock;
}

}  // namespace nnvmc::scf
