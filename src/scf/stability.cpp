/// @file stability.cpp
/// Davidson solve for the lowest eigenpair of the real orbital-rotation Hessian (A + B).
#include "scf/stability.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

namespace nnvmc::scf {

namespace {

/// One spin channel's orbitals split into occupied and virtual columns.
struct Channel {
  Eigen::MatrixXd occ, vir;  ///< [n, o], [n, v]
  Eigen::MatrixXd gap;       ///< ε_a − ε_i [v, o]
  Eigen::Index size() const { return gap.size(); }
};

Channel channel(const Eigen::MatrixXd& c, const Eigen::VectorXd& eps, int n_occupied) {
  const Eigen::Index m = c.cols(), v = m - n_occupied;
  Channel ch{c.leftCols(n_occupied), c.rightCols(v), Eigen::MatrixXd(v, n_occupied)};
  for (Eigen::Index i = 0; i < n_occupied; ++i)
    for (Eigen::Index a = 0; a < v; ++a) ch.gap(a, i) = eps(n_occupied + a) - eps(i);
  return ch;
}

/// (A + B) x for x = [x_α (column-major [v_α, o_α]), x_β].
class Hessian {
 public:
  Hessian(const JKBuilder& jk, Channel alpha, Channel beta) : jk_(jk), ch_{std::move(alpha), std::move(beta)} {}

  Eigen::Index size() const { return ch_[0].size() + ch_[1].size(); }

  Eigen::VectorXd diagonal() const {
    Eigen::VectorXd d(size());
    d << ch_[0].gap.reshaped(), ch_[1].gap.reshaped();
    return d;
  }

  Eigen::VectorXd apply(const Eigen::VectorXd& x) const {
    Eigen::MatrixXd d1[2];
    Eigen::Index offset = 0;
    for (int s = 0; s < 2; ++s) {
      const Channel& c = ch_[s];
      const auto xs = x.segment(offset, c.size()).reshaped(c.gap.rows(), c.gap.cols());
      const Eigen::MatrixXd half = c.vir * xs * c.occ.transpose();
      d1[s] = half + half.transpose();
      offset += c.size();
    }
    Eigen::MatrixXd J;
    std::vector<Eigen::MatrixXd> K;
    jk_.build(d1[0] + d1[1], {d1[0], d1[1]}, J, K);
    Eigen::VectorXd y(size());
    offset = 0;
    for (int s = 0; s < 2; ++s) {
      const Channel& c = ch_[s];
      const auto xs = x.segment(offset, c.size()).reshaped(c.gap.rows(), c.gap.cols());
      const Eigen::MatrixXd ys = c.gap.cwiseProduct(xs) + c.vir.transpose() * (J - K[s]) * c.occ;
      y.segment(offset, c.size()) = ys.reshaped();
      offset += c.size();
    }
    return y;
  }

  Eigen::MatrixXd part(const Eigen::VectorXd& x, int s) const {
    const Eigen::Index offset = s == 0 ? 0 : ch_[0].size();
    return x.segment(offset, ch_[s].size()).reshaped(ch_[s].gap.rows(), ch_[s].gap.cols());
  }

 private:
  const JKBuilder& jk_;
  Channel ch_[2];
};

}  // namespace

StabilityResult uhf_stability(const JKBuilder& jk, const Eigen::MatrixXd& c_alpha, const Eigen::VectorXd& eps_alpha,
                              int n_alpha, const Eigen::MatrixXd& c_beta, const Eigen::VectorXd& eps_beta, int n_beta,
                              const StabilityOptions& options) {
  const Hessian h(jk, channel(c_alpha, eps_alpha, n_alpha), channel(c_beta, eps_beta, n_beta));
  StabilityResult result;
  const Eigen::Index n = h.size();
  if (n == 0) {
    result.lowest = std::numeric_limits<double>::infinity();
    result.converged = true;
    return result;
  }
  const Eigen::VectorXd diag = h.diagonal();
  const Eigen::Index half = n / 2;
  if (options.same_spins && (c_alpha.cols() != c_beta.cols() || n_alpha != n_beta))
    throw std::invalid_argument("uhf_stability: same_spins needs RHF-like orbitals (as many of each spin)");
  Eigen::MatrixXd V(n, 0), AV(n, 0);
  // Adds t orthogonalised against V (twice, for round-off); false when nothing of it is left.
  // (same_spins: t's α and β halves averaged first; (A + B) keeps such vectors so for RHF orbitals)
  const auto add = [&](Eigen::VectorXd t) {
    if (options.same_spins) {
      const Eigen::VectorXd mean = 0.5 * (t.head(half) + t.tail(half));
      t.head(half) = mean;
      t.tail(half) = mean;
    }
    for (int pass = 0; pass < 2 && V.cols() > 0; ++pass) t -= V * (V.transpose() * t);
    const double norm = t.norm();
    if (!(norm > 1e-8)) return false;
    t /= norm;
    V.conservativeResize(Eigen::NoChange, V.cols() + 1);
    AV.conservativeResize(Eigen::NoChange, AV.cols() + 1);
    V.col(V.cols() - 1) = t;
    AV.col(AV.cols() - 1) = h.apply(t);
    ++result.iterations;
    return true;
  };
  // Start from the unit vectors of the smallest gaps (for an RHF-like solution both spins' copies
  // of the same excitation, so that singlet and triplet combinations are in the first subspace).
  std::vector<Eigen::Index> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), Eigen::Index(0));
  const auto k = static_cast<std::ptrdiff_t>(std::min<Eigen::Index>(std::max(options.guess_vectors, 1), n));
  std::partial_sort(order.begin(), order.begin() + k, order.end(),
                    [&](Eigen::Index a, Eigen::Index b) { return diag(a) < diag(b); });
  for (std::ptrdiff_t i = 0; i < k; ++i) add(Eigen::VectorXd::Unit(n, order[static_cast<std::size_t>(i)]));
  // ... and one vector with every component (fixed pseudo-random signs and sizes): the diagonal
  // preconditioner keeps the search in the symmetry blocks of its start vectors, and an
  // instability in a block none of the unit vectors touches would be missed
  {
    Eigen::VectorXd mixed(n);
    std::uint64_t state = 0x9e3779b97f4a7c15ull;
    for (Eigen::Index i = 0; i < n; ++i) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      mixed(i) = static_cast<double>(state >> 11) / 9007199254740992.0 - 0.5;  // [-0.5, 0.5)
    }
    add(mixed);
  }

  Eigen::VectorXd x;
  while (true) {
    const Eigen::MatrixXd g = V.transpose() * AV;
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(0.5 * (g + g.transpose()));
    const double theta = es.eigenvalues()(0);
    const Eigen::VectorXd y = es.eigenvectors().col(0);
    x = V * y;
    const Eigen::VectorXd ax = AV * y;
    const Eigen::VectorXd r = ax - theta * x;
    result.lowest = theta;
    if (r.norm() < options.residual_tolerance || V.cols() >= n) {
      result.converged = true;
      break;
    }
    if (result.iterations >= options.max_iterations) break;
    Eigen::VectorXd t(n);
    for (Eigen::Index i = 0; i < n; ++i) {
      double d = theta - diag(i);
      if (std::abs(d) < 1e-4) d = std::copysign(1e-4, d);
      t(i) = r(i) / d;
    }
    if (V.cols() >= options.max_subspace) {  // restart from the two lowest estimates (AV stays exact: linear)
      const Eigen::MatrixXd keep = es.eigenvectors().leftCols(std::min<Eigen::Index>(2, V.cols()));
      V = V * keep;
      AV = AV * keep;
    }
    if (!add(t)) {  // the correction lies in the subspace: as converged as the Davidson gets
      result.converged = r.norm() < 100 * options.residual_tolerance;
      break;
    }
  }
  x.normalize();
  result.x_alpha = h.part(x, 0);
  result.x_beta = h.part(x, 1);
  return result;
}

Eigen::VectorXd orbital_hessian_product(const JKBuilder& jk, const Eigen::MatrixXd& c_alpha,
                                        const Eigen::VectorXd& eps_alpha, int n_alpha, const Eigen::MatrixXd& c_beta,
                                        const Eigen::VectorXd& eps_beta, int n_beta, const Eigen::VectorXd& x) {
  const Hessian h(jk, channel(c_alpha, eps_alpha, n_alpha), channel(c_beta, eps_beta, n_beta));
  if (x.size() != h.size())
    throw std::invalid_argument("orbital_hessian_product: x has " + std::to_string(x.size()) + " entries, not " +
                                std::to_string(h.size()));
  return h.apply(x);
}

Eigen::MatrixXd rotate_occupied(const Eigen::MatrixXd& c, int n_occupied, const Eigen::MatrixXd& kappa) {
  const Eigen::MatrixXd occ = c.leftCols(n_occupied), vir = c.rightCols(c.cols() - n_occupied);
  if (kappa.size() == 0) return occ;
  const Eigen::JacobiSVD<Eigen::MatrixXd> svd(kappa, Eigen::ComputeThinU | Eigen::ComputeThinV);
  const Eigen::MatrixXd& U = svd.matrixU();  // [v, r]
  const Eigen::MatrixXd& V = svd.matrixV();  // [o, r]
  const Eigen::ArrayXd sigma = svd.singularValues().array();
  const Eigen::MatrixXd occ_v = occ * V;
  return occ - occ_v * V.transpose() +
         (occ_v * sigma.cos().matrix().asDiagonal() + vir * U * sigma.sin().matrix().asDiagonal()) * V.transpose();
}

double uhf_s_squared(const Eigen::MatrixXd& c_alpha_occ, const Eigen::MatrixXd& c_beta_occ, const Eigen::MatrixXd& s) {
  const double sz = 0.5 * static_cast<double>(c_alpha_occ.cols() - c_beta_occ.cols());
  const Eigen::MatrixXd overlap = c_alpha_occ.transpose() * s * c_beta_occ;
  return sz * (sz + 1) + static_cast<double>(c_beta_occ.cols()) - overlap.squaredNorm();
}

}  // namespace nnvmc::scf
