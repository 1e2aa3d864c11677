#pragma once
/// @file stability.hpp
/// Internal stability of an SCF solution: is it a minimum of the energy under real orbital
/// rotations, or a saddle point (the RHF-like UHF solution of a stretched bond)?
///
/// A real rotation mixes occupied orbital i into virtual a of the same spin by κ_ai. The
/// energy's Hessian in κ is 2 (A + B), (A + B) the operator of linear-response theory
/// (E(exp κ) = E₀ + κᵀ(A + B)κ + O(κ³) at a stationary point);
/// on a vector x = (x_α [v_α, o_α], x_β [v_β, o_β]) it is
///   ((A + B) x)_σ = (ε_a − ε_i) x_σ,ai + [C_vᵀ (J[D¹_α + D¹_β] − K[D¹_σ]) C_o]_σ,ai,
///   D¹_σ = C_v x_σ C_oᵀ + C_o x_σᵀ C_vᵀ  (symmetric, AO [n, n]),
/// i.e. one J/K build per product. The solution is stable when the lowest eigenvalue is ≥ 0;
/// its eigenvector is the direction in which the energy goes down.
#include <Eigen/Dense>

#include "scf/jk_builder.hpp"

namespace nnvmc::scf {

/// Settings of the Davidson solve for the lowest eigenvalue.
struct StabilityOptions {
  int max_iterations = 60;        ///< Davidson iterations (one J/K build each) before giving up
  double residual_tolerance = 1e-5;  ///< converged when |(A+B)x − λx| < this (x normalised)
  int guess_vectors = 4;          ///< start vectors: unit vectors at the smallest ε_a − ε_i, and one with every component
  int max_subspace = 40;          ///< restart from the current estimate above this many vectors
  /// Search only x_α = x_β: for an RHF solution (c_beta = c_alpha), its RHF → RHF (singlet)
  /// rotations, whose lowest eigenvalue the triplet one below it would hide.
  bool same_spins = false;
};

/// Lowest eigenpair of the orbital Hessian.
struct StabilityResult {
  double lowest = 0;              ///< lowest eigenvalue (hartree); < 0: unstable
  Eigen::MatrixXd x_alpha;        ///< its eigenvector's α part [v_α, o_α]
  Eigen::MatrixXd x_beta;         ///< β part [v_β, o_β] (‖x‖ = 1 over both)
  int iterations = 0;             ///< Davidson iterations (J/K builds)
  bool converged = false;         ///< residual below tolerance
};

/// Lowest eigenpair of (A + B) for UHF orbitals `c_alpha`, `c_beta` [n, m] with energies
/// `eps_alpha`, `eps_beta` [m] (canonical: the final Fock matrices are diagonal in them) and
/// n_alpha, n_beta occupied. An RHF solution is passed as c_beta = c_alpha: the result is then
/// the lowest of its singlet (RHF → RHF) and triplet (RHF → UHF) instabilities.
/// An empty rotation space (no virtuals) gives lowest = +inf.
StabilityResult uhf_stability(const JKBuilder& jk, const Eigen::MatrixXd& c_alpha, const Eigen::VectorXd& eps_alpha,
                              int n_alpha, const Eigen::MatrixXd& c_beta, const Eigen::VectorXd& eps_beta, int n_beta,
                              const StabilityOptions& options = {});

/// (A + B) x for x = [x_α (column-major [v_α, o_α]), x_β] with the orbitals of uhf_stability
/// (one J/K build): the operator whose lowest eigenpair uhf_stability finds. [v_α o_α + v_β o_β]
Eigen::VectorXd orbital_hessian_product(const JKBuilder& jk, const Eigen::MatrixXd& c_alpha,
                                        const Eigen::VectorXd& eps_alpha, int n_alpha, const Eigen::MatrixXd& c_beta,
                                        const Eigen::VectorXd& eps_beta, int n_beta, const Eigen::VectorXd& x);

/// The occupied orbitals [n, o] after the rotation exp(κ) with κ_ai = `kappa` [v, o] (a unitary
/// mixing of the occupied columns of `c` [n, m] with its virtual ones), exactly, through the
/// SVD κ = U Σ Vᵀ: C_o' = C_o (1 − V Vᵀ) + (C_o V cos Σ + C_v U sin Σ) Vᵀ.
Eigen::MatrixXd rotate_occupied(const Eigen::MatrixXd& c, int n_occupied, const Eigen::MatrixXd& kappa);

/// ⟨S²⟩ of the UHF determinant of the occupied orbitals: S_z(S_z + 1) + n_β − Σ_ij ⟨i_α|j_β⟩²
/// with overlap `s` [n, n].
double uhf_s_squared(const Eigen::MatrixXd& c_alpha_occ, const Eigen::MatrixXd& c_beta_occ, const Eigen::MatrixXd& s);

}  // namespace nnvmc::scf
