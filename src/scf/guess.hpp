#pragma once
/// @file guess.hpp
/// Initial densities for the SCF.
#include <Eigen/Dense>

#include "core/system.hpp"
#include "scf/basis.hpp"
#include "scf/scf.hpp"

namespace nnvmc::scf {

/// Superposition of atomic densities: for each element, a spin-restricted atomic HF with
/// fractional (spherically averaged) occupations in the atom's own functions of `basis`;
/// the molecular guess is the block-diagonal sum, total electron count ΣZ. [n, n].
/// Atomic calculations that do not converge within a few dozen iterations still
/// contribute their last density (it is only a guess). `molecule_jk`, when given, builds J/K of
/// the molecule in `basis`: a molecule of one atom uses it (its ERIs are the atom's) instead of
/// computing them again (half of an Fe atom's UHF time in cc-pVDZ).
Eigen::MatrixXd sad_density(const System& system, const BasisSet& basis, const ScfOptions& options,
                            const JKBuilder* molecule_jk = nullptr);

/// Total density of the core-Hamiltonian guess: lowest eigenvectors of H in the
/// orthonormalised basis, filled with `electrons` electrons (≤ 2 per orbital). [n, n].
Eigen::MatrixXd core_density(const Eigen::MatrixXd& H, const Eigen::MatrixXd& S, double electrons,
                             double lindep_threshold);

}  // namespace nnvmc::scf
