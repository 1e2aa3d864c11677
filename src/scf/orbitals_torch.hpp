#pragma once
/// @file orbitals_torch.hpp
/// Gaussian basis functions and Hartree–Fock molecular orbitals evaluated on electron
/// positions with differentiable libtorch ops (autograd gives gradients and Laplacians).
/// Target nnvmc::scf_torch; the plain SCF (nnvmc::scf) stays torch-free.
///
/// Numerics: every function is a polynomial times exp(−α|r − R|²) built from |r − R|²
/// (never |r − R|), so values and all derivatives are finite everywhere, including at the
/// nuclei (Gaussians have no cusp; a cusp-correcting ansatz such as PauliNet adds it on top).
#include <torch/torch.h>

#include <Eigen/Dense>

#include <cstdint>
#include <utility>

#include "blocks/gaussian_orbitals.hpp"
#include "scf/basis.hpp"
#include "scf/scf.hpp"

namespace nnvmc::scf {

/// Linear combinations φ_j(r) = Σ_p C(p, j) χ_p(r) of the functions χ_p of a BasisSet
/// (same functions, order and normalisation as the integrals in integrals.hpp), at the basis's
/// own centres: the basis's tensor table (basis_table.hpp) evaluated by the building block's
/// plain-tensor path (gaussian_orbital_values), so the HF baseline and the PauliNet/Orbformer
/// orbitals are one code.
class GaussianOrbitals {
 public:
  GaussianOrbitals() = default;
  /// @param basis the AO basis (copied into tensors) @param coefficients [n_basis, n_orb]
  /// @param options dtype (float64 or float32) and device of every tensor produced.
  /// @throws InputError if coefficients has the wrong number of rows.
  GaussianOrbitals(const BasisSet& basis, const Eigen::MatrixXd& coefficients,
                   torch::TensorOptions options = torch::kFloat64);

  /// AO values. @param r [B, N, 3] (bohr) @return χ_p(r_i) [B, N, n_basis], BasisSet order.
  torch::Tensor basis_values(const torch::Tensor& r) const;
  /// Orbital values. @param r [B, N, 3] @return φ_j(r_i) [B, N, n_orb].
  torch::Tensor forward(const torch::Tensor& r) const;
  torch::Tensor operator()(const torch::Tensor& r) const { return forward(r); }

  int64_t n_basis() const { return table_.n_basis; }  ///< AO functions
  int64_t n_orbitals() const { return n_orb_; }       ///< columns of the coefficient matrix

 private:
  GaussianBasisTable table_;    ///< exponents, contractions and angular parts, no centres
  torch::Tensor centres_;       ///< [M, 3] the centre of each atom index of the basis's shells
  torch::Tensor coefficients_;  ///< [n_basis, n_orb] BasisSet order
  int64_t n_orb_ = 0;
};

/// How the functions of `basis` turn with a rotation R about their own centres:
/// χ_p(Rᵀ(x − O')) = Σ_q D(q, p) χ_q(x − O') for each shell (block diagonal, one block per shell
/// and contraction), so that orbitals with coefficients C [n_basis, n], turned by R with their
/// molecule, are the orbitals D·C on the basis whose centres are turned by R (O' = R·O about any
/// point). Each block is fitted by least squares to the functions' values at sample points
/// (exact: a shell's functions of angular momentum l span a space that rotations keep).
/// @param rotation a proper rotation [3, 3] @return D [n_basis, n_basis]
Eigen::MatrixXd turned_functions(const BasisSet& basis, const Eigen::Matrix3d& rotation);

/// Occupied HF orbitals of both spins, and the HF Slater determinant.
struct HartreeFockOrbitals {
  GaussianOrbitals alpha;  ///< the n_alpha occupied α orbitals
  GaussianOrbitals beta;   ///< the n_beta occupied β orbitals (RHF: the same as α)
  int n_alpha = 0;         ///< spin-up electrons (first in r)
  int n_beta = 0;          ///< spin-down electrons

  /// Slater matrices, element (i, j) = orbital j at electron i.
  /// @param r [B, n_alpha + n_beta, 3] @return {[B, n_alpha, n_alpha], [B, n_beta, n_beta]}
  std::pair<torch::Tensor, torch::Tensor> matrices(const torch::Tensor& r) const;
  /// sign and log|det Φ_α · det Φ_β| of the HF wavefunction. @param r [B, N, 3]
  /// @return {sign [B], logabs [B]} (an empty spin channel contributes 1; a singular matrix
  /// gives sign 0 and logabs −inf), through the pivoted LU (linalg_lu_factor_ex)
  std::pair<torch::Tensor, torch::Tensor> log_slater(const torch::Tensor& r) const;
};

/// The occupied orbitals of an SCF result on `basis` (the basis it was computed with).
/// @throws InputError if the basis size does not match the result.
HartreeFockOrbitals occupied_orbitals(const ScfResult& result, const BasisSet& basis,
                                      torch::TensorOptions options = torch::kFloat64);

}  // namespace nnvmc::scf
