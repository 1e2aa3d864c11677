#pragma once
/// @file scf.hpp
/// Restricted and unrestricted Hartree–Fock (RHF/UHF) with DIIS.
///
/// Matrix shapes: n = n_basis (AO functions, BasisSet order), m = n_mo (orthonormal
/// molecular orbitals; m < n only if the overlap is nearly singular). Orbital coefficients
/// are columns: φ_i(r) = Σ_p C(p, i) χ_p(r), orbitals sorted by energy, the first
/// n_alpha (n_beta) are occupied.
#include <Eigen/Dense>

#include <limits>
#include <string>
#include <vector>

#include "core/system.hpp"
#include "scf/basis.hpp"
#include "scf/jk_builder.hpp"

namespace nnvmc::scf {

/// Initial guess for the density.
enum class ScfGuess {
  core,  ///< diagonalise the core Hamiltonian (bare nuclei)
  sad,   ///< superposition of spherically averaged atomic densities (atomic HF in the same basis)
  /// sad; for open-shell UHF with stored, Cholesky or density-fitted ERIs (cheap Fock builds) also core, and the lower of the
  /// two converged solutions is kept: open shells have several UHF minima, and one guess alone
  /// lands in a higher one for many transition-metal atoms (Fe in cc-pVDZ from SAD: 67 mEh above
  /// the solution from the core guess, stable by the stability analysis, as Psi4's)
  automatic,
};

/// Internal-stability analysis after the SCF has converged (scf/stability.hpp).
enum class StabilityMode {
  automatic,  ///< follow for UHF, off for RHF
  off,        ///< none
  check,      ///< compute the lowest orbital-Hessian eigenvalue, warn when it is negative
  follow,     ///< while unstable, rotate the orbitals along the instability and converge again (RHF: along RHF → RHF ones)
};

/// SCF settings; the defaults converge the molecules of the test set to 1e-10 Eh.
struct ScfOptions {
  bool unrestricted = false;            ///< UHF (separate α/β orbitals) instead of RHF
  ScfGuess guess = ScfGuess::automatic; ///< initial density
  int max_iterations = 100;             ///< give up (NumericalError) after this many Fock builds
  double energy_tolerance = 1e-10;      ///< converged when |ΔE| < this (hartree) ...
  double commutator_tolerance = 1e-8;   ///< ... and max|X^T(FDS − SDF)X| < this
  int diis_size = 8;                    ///< stored DIIS vectors; 0 disables DIIS
  int diis_start = 1;                   ///< first iteration (1-based) that extrapolates
  double damping = 0.0;                 ///< in [0, 1): F ← (1−d)F + d·F_previous before DIIS starts
  double level_shift = 0.0;             ///< hartree added to virtual orbital energies (0 = off)
  /// Drop overlap eigenvalues below this (canonical orthogonalisation), as Psi4's S_TOLERANCE
  /// (1e-7; it was 1e-8). An H8 chain at 0.5 Å in aug-cc-pVDZ drops Psi4's four combinations
  /// and has Psi4's energy; with 1e-8 three, 0.5 mEh lower.
  double lindep_threshold = 1e-7;
  StabilityMode stability = StabilityMode::automatic;  ///< stability analysis after convergence
  double stability_threshold = 1e-5;    ///< an orbital-Hessian eigenvalue below −this (Eh) is an instability
  int max_stability_follows = 5;        ///< follow: at most this many rotations and new SCF solves
  /// follow: the angles (rad) of the rotation along an instability, tried in turn until the SCF
  /// from the rotated orbitals converges lower (a long step can land on another saddle or not converge)
  std::vector<double> stability_follow_angles = {1.0, 0.5, 0.25};
  bool throw_on_failure = true;         ///< false: return converged = false instead of throwing
  /// What the non-convergence error advises (the flags of the command that runs the SCF).
  std::string convergence_advice = "raise --max-iter, or try --level-shift, or --damping with --diis-start 3 or later (nnvmc scf)";
  JKOptions jk;                         ///< ERI threads, screening, in-core memory limit
};

/// Everything a post-HF or VMC code needs from an SCF run.
struct ScfResult {
  bool unrestricted = false;     ///< UHF result (else RHF: β quantities equal α ones)
  bool converged = false;        ///< both tolerances met
  int iterations = 0;            ///< Fock builds performed
  double energy = 0;             ///< total energy E_HF including e_nuc (hartree)
  double e_nuc = 0;              ///< nuclear repulsion (hartree)
  double delta_energy = 0;       ///< |ΔE| of the last iteration
  double commutator = 0;         ///< max|X^T(FDS − SDF)X| at the end
  int n_basis = 0;               ///< AO functions n
  int n_mo = 0;                  ///< molecular orbitals m
  int n_alpha = 0;               ///< occupied α orbitals
  int n_beta = 0;                ///< occupied β orbitals
  std::string basis;             ///< basis name
  double s_squared = 0;          ///< ⟨S²⟩ of the determinant (RHF: 0; UHF: spin contamination above S(S+1))
  /// Lowest eigenvalue of the orbital-rotation Hessian (A + B) at the final orbitals (Eh);
  /// NaN when no stability analysis ran; < 0: a saddle point, not a minimum.
  double stability_eigenvalue = std::numeric_limits<double>::quiet_NaN();
  /// RHF: lowest eigenvalue of its RHF → RHF (singlet) rotations alone (Eh): searched when the
  /// lowest of all (stability_eigenvalue) is an unstable triplet one, and that one when it is a
  /// singlet one; NaN otherwise (no analysis, UHF, or a stable triplet lowest: then every singlet
  /// one is larger still).
  double singlet_stability_eigenvalue = std::numeric_limits<double>::quiet_NaN();
  int stability_follows = 0;     ///< rotations along instabilities that lowered the energy (follow)
  int iterations_following = 0;  ///< of `iterations`, those of the SCF solves after such rotations
  double energy_before_follow = std::numeric_limits<double>::quiet_NaN();  ///< E of the first, unstable solution
  std::string guess = "sad";     ///< the initial guess of the solution returned ("sad" or "core")
  /// ScfGuess::automatic with two guesses: the energy the other one converged to (NaN: one guess,
  /// or the other did not converge)
  double other_guess_energy = std::numeric_limits<double>::quiet_NaN();
  Eigen::VectorXd eps_alpha;     ///< α orbital energies [m], ascending
  Eigen::VectorXd eps_beta;      ///< β orbital energies [m]
  Eigen::MatrixXd c_alpha;       ///< α MO coefficients [n, m]
  Eigen::MatrixXd c_beta;        ///< β MO coefficients [n, m]
  Eigen::MatrixXd d_alpha;       ///< α density C_occ C_occᵀ [n, n]
  Eigen::MatrixXd d_beta;        ///< β density [n, n]
  Eigen::MatrixXd f_alpha;       ///< final α Fock matrix [n, n] (RHF: the closed-shell Fock)
  Eigen::MatrixXd f_beta;        ///< final β Fock matrix [n, n]
  Eigen::MatrixXd h_core;        ///< core Hamiltonian T + V [n, n]
  Eigen::MatrixXd overlap;       ///< AO overlap S [n, n]

  /// Highest occupied orbital energy over both spins (hartree).
  double homo() const;
  /// Lowest unoccupied orbital energy over both spins (hartree); NaN if there is none.
  double lumo() const;
};

/// RHF. @throws InputError if the molecule is not closed shell (odd electron count or
/// spin ≠ 0); NumericalError if the SCF does not converge in max_iterations (unless
/// throw_on_failure is false) or produces non-finite numbers.
ScfResult run_rhf(const System& system, const BasisSet& basis, ScfOptions options = {});

/// UHF with n_alpha = system.n_up(), n_beta = system.n_down(). @throws as run_rhf
/// (except for the closed-shell requirement).
ScfResult run_uhf(const System& system, const BasisSet& basis, ScfOptions options = {});

/// RHF or UHF according to options.unrestricted.
ScfResult run_scf(const System& system, const BasisSet& basis, const ScfOptions& options = {});

/// Convenience: builds the basis `basis_name` (see make_basis) and runs run_scf.
ScfResult run_scf(const System& system, const std::string& basis_name, const ScfOptions& options = {});

}  // namespace nnvmc::scf
