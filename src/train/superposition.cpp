#include "train/superposition.hpp"

#include <Eigen/Eigenvalues>
#include <Eigen/SVD>
#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace nnvmc {

namespace {
/// The smallest rotation that takes the unit vector u onto the unit vector v (Rodrigues); for
/// opposite vectors, the half turn about an axis perpendicular to u.
Eigen::Matrix3d turn_onto(const Eigen::Vector3d& u, const Eigen::Vector3d& v) {
  const Eigen::Vector3d k = u.cross(v);
  const double sine = k.norm(), cosine = u.dot(v);
  if (sine < 1e-12) {
    if (cosine > 0) return Eigen::Matrix3d::Identity();
    Eigen::Vector3d w = u.unitOrthogonal();
    return 2.0 * w * w.transpose() - Eigen::Matrix3d::Identity();
  }
  Eigen::Matrix3d cross;
  cross << 0, -k.z(), k.y(), k.z(), 0, -k.x(), -k.y(), k.x(), 0;
  return Eigen::Matrix3d::Identity() + cross + cross * cross * ((1 - cosine) / (sine * sine));
}
}  // namespace

Eigen::Matrix3d best_rotation(const std::vector<Eigen::Vector3d>& a, const std::vector<Eigen::Vector3d>& b) {
  if (a.size() != b.size()) throw std::invalid_argument("best_rotation: the point sets differ in size");
  if (a.empty()) return Eigen::Matrix3d::Identity();
  Eigen::Vector3d ca = Eigen::Vector3d::Zero(), cb = Eigen::Vector3d::Zero();
  for (std::size_t k = 0; k < a.size(); ++k) ca += a[k], cb += b[k];
  ca /= double(a.size()), cb /= double(b.size());
  Eigen::Matrix3d h = Eigen::Matrix3d::Zero();  // Σ (a_k − ā)(b_k − b̄)ᵀ
  Eigen::Matrix3d spread_a = Eigen::Matrix3d::Zero(), spread_b = Eigen::Matrix3d::Zero();
  for (std::size_t k = 0; k < a.size(); ++k) {
    h += (a[k] - ca) * (b[k] - cb).transpose();
    spread_a += (a[k] - ca) * (a[k] - ca).transpose();
    spread_b += (b[k] - cb) * (b[k] - cb).transpose();
  }
  const Eigen::JacobiSVD<Eigen::Matrix3d> svd(h, Eigen::ComputeFullU | Eigen::ComputeFullV);
  if (!(svd.singularValues()[0] > 1e-12)) return Eigen::Matrix3d::Identity();
  // Collinear (either set; its own second principal spread below 1e-3 of the first, in length, so
  // coordinates that carry an optimiser's noise count): the smallest turn of the axis.
  const auto collinear = [](const Eigen::Matrix3d& spread) {
    const Eigen::Vector3d e = Eigen::SelfAdjointEigenSolver<Eigen::Matrix3d>(spread).eigenvalues();  // ascending
    return e[1] <= 1e-6 * e[2];
  };
  if (collinear(spread_a) || collinear(spread_b)) return turn_onto(svd.matrixU().col(0), svd.matrixV().col(0));
  Eigen::Matrix3d fix = Eigen::Matrix3d::Identity();
  fix(2, 2) = (svd.matrixV() * svd.matrixU().transpose()).determinant() < 0 ? -1.0 : 1.0;  // no reflection
  return svd.matrixV() * fix * svd.matrixU().transpose();
}

double rotation_angle_degrees(const Eigen::Matrix3d& rotation) {
  const double cosine = std::clamp(0.5 * (rotation.trace() - 1.0), -1.0, 1.0);
  return std::acos(cosine) * 180.0 / M_PI;
}

}  // namespace nnvmc
