#pragma once
/// @file scf_loop.hpp
/// The SCF iteration shared by RHF, UHF and the atomic calculations of the SAD guess
/// (internal to nnvmc::scf; use scf.hpp).
#include <Eigen/Dense>

#include <vector>

#include "scf/jk_builder.hpp"
#include "scf/scf.hpp"

namespace nnvmc::scf::detail {

/// What one SCF solve works on. Spin channels: one (restricted: occupations ≤ 2,
/// F = H + J − ½K) or two (unrestricted: occupations ≤ 1, F_σ = H + J − K_σ).
struct ScfProblem {
  const Eigen::MatrixXd& S;              ///< overlap [n, n]
  const Eigen::MatrixXd& H;              ///< core Hamiltonian [n, n]
  const JKBuilder& jk;                   ///< ERIs
  double e_nuc = 0;                      ///< nuclear repulsion added to the energy
  std::vector<double> electrons;         ///< electrons per channel (size 1 or 2)
  bool fractional = false;               ///< spread the Fermi-level electrons over degenerate orbitals
};

/// State at the end of a solve, per channel.
struct ScfState {
  std::vector<Eigen::MatrixXd> C, D, F;  ///< coefficients [n, m], densities [n, n], Fock [n, n]
  std::vector<Eigen::VectorXd> eps;      ///< orbital energies [m]
  double energy = 0, delta_energy = 0, commutator = 0;
  int iterations = 0;
  int aufbau_escapes = 0;  ///< stationary non-aufbau states left by mixing (solve_scf)
  bool off_aufbau = false;  ///< stopped at such a state (after kMaxAufbauEscapes mixings, or at the last iteration)
  bool converged = false;
};

/// How many stationary states whose occupied orbitals are not the lowest of their Fock matrix one
/// solve leaves (each by mixing such an occupied orbital 1:1 with the lower empty one) before it
/// gives up, unconverged.
inline constexpr int kMaxAufbauEscapes = 4;

/// Runs the SCF from the given initial densities (one per channel, each holding that
/// channel's electrons). Converged: energy change and max|[F, D]| within tolerance, and the
/// occupied orbitals the lowest of their Fock matrix (aufbau; a stationary state that is not, as
/// fragments too far apart to couple give, is left by mixing). Never throws for non-convergence (returns converged = false);
/// throws NumericalError for non-finite energies or an empty orthonormal basis.
ScfState solve_scf(const ScfProblem& problem, std::vector<Eigen::MatrixXd> density,
                   const ScfOptions& options);

/// Occupation numbers for ascending orbital energies `eps` holding `electrons`, at most
/// `max_occ` each (aufbau); `fractional` averages over orbitals degenerate (within 1e-4 Eh)
/// with the highest occupied one.
Eigen::VectorXd aufbau_occupations(const Eigen::VectorXd& eps, double electrons, double max_occ,
                                   bool fractional);

/// Canonical orthogonaliser X = U s^{-1/2} over eigenvalues of S above `threshold`, [n, m].
Eigen::MatrixXd orthogonalizer(const Eigen::MatrixXd& S, double threshold);

}  // namespace nnvmc::scf::detail
