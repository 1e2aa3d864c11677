/// The rotation that best lays one molecule's nuclei onto another's (pretraining's alignment of
/// turned molecules).
#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <stdexcept>

#include "train/superposition.hpp"

using namespace nnvmc;

namespace {
std::vector<Eigen::Vector3d> turned(const std::vector<Eigen::Vector3d>& a, const Eigen::Matrix3d& r,
                                    const Eigen::Vector3d& shift) {
  std::vector<Eigen::Vector3d> out;
  for (const auto& p : a) out.push_back(r * p + shift);
  return out;
}
}  // namespace

// A non-planar and a planar molecule turned and moved as a whole: the rotation is found exactly,
// proper (a mirror image is not taken for a turn), whatever the shift.
TEST(BestRotation, FindsTheTurnOfARigidlyMovedMolecule) {
  const Eigen::Matrix3d r = Eigen::AngleAxisd(1.1, Eigen::Vector3d(0.3, -1, 2).normalized()).toRotationMatrix();
  const std::vector<Eigen::Vector3d> pyramid = {{0, 0, 0}, {1.8, 0, 0.4}, {-0.6, 1.7, 0.4}, {-0.6, -1.7, 0.4}};
  const std::vector<Eigen::Vector3d> planar = {{0, 0, 0}, {1.8, 0.3, 0}, {-0.9, 1.5, 0}};
  for (const auto& a : {pyramid, planar}) {
    const Eigen::Matrix3d found = best_rotation(a, turned(a, r, {4, -2, 7}));
    EXPECT_LT((found - r).cwiseAbs().maxCoeff(), 1e-12);
    EXPECT_NEAR(found.determinant(), 1.0, 1e-12);
  }
  EXPECT_NEAR(rotation_angle_degrees(r), 1.1 * 180 / M_PI, 1e-9);
  // a mirror image: the best proper rotation, never a reflection
  std::vector<Eigen::Vector3d> mirrored = pyramid;
  for (auto& p : mirrored) p.z() = -p.z();
  EXPECT_NEAR(best_rotation(pyramid, mirrored).determinant(), 1.0, 1e-12);
  EXPECT_THROW(best_rotation(pyramid, planar), std::invalid_argument);
}

// A linear molecule fixes no turn about its axis: the smallest turn of its axis is taken (the
// identity when the axis is the same, a stretched bond included), and a half turn for a reversed one.
TEST(BestRotation, ALinearMoleculeGetsTheSmallestTurnOfItsAxis) {
  const std::vector<Eigen::Vector3d> lih = {{0, 0, 0}, {0, 0, 3.015}};
  EXPECT_LT((best_rotation(lih, {{1, 1, 1}, {1, 1, 4.2}}) - Eigen::Matrix3d::Identity()).cwiseAbs().maxCoeff(), 1e-14);
  const Eigen::Matrix3d quarter = best_rotation(lih, {{0, 0, 0}, {3.015, 0, 0}});
  EXPECT_LT((quarter * Eigen::Vector3d::UnitZ() - Eigen::Vector3d::UnitX()).norm(), 1e-12);
  EXPECT_LT((quarter * Eigen::Vector3d::UnitY() - Eigen::Vector3d::UnitY()).norm(), 1e-12);  // (about y only)
  EXPECT_NEAR(rotation_angle_degrees(quarter), 90.0, 1e-9);
  const Eigen::Matrix3d half = best_rotation(lih, {{0, 0, 3.015}, {0, 0, 0}});
  EXPECT_LT((half * Eigen::Vector3d::UnitZ() + Eigen::Vector3d::UnitZ()).norm(), 1e-12);
  EXPECT_NEAR(half.determinant(), 1.0, 1e-12);
  // a linear molecule whose coordinates carry an optimiser's noise (1e-3 bohr) is still linear: no
  // turn about its axis is made up (it fell through to Kabsch, which picks one at random: a review)
  const std::vector<Eigen::Vector3d> co2 = {{0, 0, -2.2}, {1e-3, 0, 0}, {0, -1e-3, 2.2}};
  const std::vector<Eigen::Vector3d> co2_noisy = {{-1e-3, 0, -2.2}, {0, 1e-3, 0}, {0, 0, 2.201}};
  EXPECT_LT(rotation_angle_degrees(best_rotation(co2, co2_noisy)), 0.1);
  // one atom: nothing to turn
  EXPECT_EQ(best_rotation({{1, 2, 3}}, {{4, 5, 6}}), Eigen::Matrix3d::Identity());
}
