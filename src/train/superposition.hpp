#pragma once
/// @file superposition.hpp
/// The rotation that best lays one set of points (a molecule's nuclei) onto another, so that a
/// molecule turned as a whole can have its Hartree–Fock orbitals compared with another
/// geometry's in one frame (pretraining's orbital alignment).
#include <Eigen/Dense>
#include <vector>

namespace nnvmc {

/// The proper rotation R (det R = +1) that minimises Σ_k |(b_k − b̄) − R (a_k − ā)|² over points
/// paired in order, ā and b̄ their means (Kabsch). Collinear points (either set, to 1e-3 of its
/// length) fix no turn about their line: the smallest rotation that takes a's line onto b's is
/// returned, so that an unturned linear molecule gets the identity. One point (or all
/// coincident): the identity.
/// @param a, b the points [n][3] (bohr), the same count @throws std::invalid_argument if the counts differ
Eigen::Matrix3d best_rotation(const std::vector<Eigen::Vector3d>& a, const std::vector<Eigen::Vector3d>& b);

/// The angle (degrees) of a rotation, in [0, 180].
double rotation_angle_degrees(const Eigen::Matrix3d& rotation);

}  // namespace nnvmc
