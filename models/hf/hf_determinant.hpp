#pragma once
/// @file hf_determinant.hpp
/// The bare Hartree–Fock (UHF) Slater determinant ψ = det Φ↑ · det Φ↓ with Gaussian
/// orbitals (no network): a baseline ansatz, the pretraining target, and a check of the
/// orbitals + Laplacian + local energy chain (its VMC energy is E_HF). It has no parameters:
/// the orbitals belong to the geometry it was built for (rebuilt with the model for another).
#include <memory>
#include <mutex>

#include "models/wavefunction.hpp"
#include "blocks/gaussian_orbitals.hpp"
#include "scf/orbitals_torch.hpp"

namespace nnvmc {

class HartreeFockDeterminant : public WaveFunction {
 public:
  /// Runs UHF for `system` in `basis_name` (RHF-equivalent for closed shells).
  HartreeFockDeterminant(const System& system, const std::string& basis_name);
  LogPsi forward(const torch::Tensor& r, const SystemTensors& sys) override;  ///< r [B, N, 3]
  /// Block-diagonal occupied-orbital matrix [B, 1, N, N]: rows electrons, columns the
  /// n↑ α orbitals then the n↓ β orbitals (zero across spin blocks).
  torch::Tensor orbitals(const torch::Tensor& r, const SystemTensors& sys) override;
  /// det Φ↑ · det Φ↓ with value, gradient and Laplacian of each Gaussian orbital in closed
  /// form (the shared `gaussian_orbitals` block), at the nuclei of `sys`.
  SignedFwdLap forward_laplacian(const FwdLap& r, const SystemTensors& sys) override;
  std::string type() const override { return "hf"; }
  double energy() const { return energy_; }  ///< E_HF of the SCF run (hartree)
  /// Occupied orbital coefficients of spin 0 (α, [n_basis, n↑]) or 1 (β, [n_basis, n↓]).
  const Eigen::MatrixXd& coefficients(int spin) const { return spin == 0 ? c_alpha_ : c_beta_; }
  const scf::BasisSet& basis() const { return basis_; }  ///< the basis at this geometry
  /// Moves the orbital tables to a dtype/device (GaussianOrbitals are not Module buffers).
  void set_options(torch::TensorOptions options);
  /// Rotates each spin's occupied orbitals Φ → Φ·R (R orthogonal, so det Φ changes by at most
  /// its sign and the state not at all) to those closest to `ref`'s, a determinant of the same
  /// electrons at another geometry: R maximises tr(C_refᵀ S C R), S the overlap of the two
  /// geometries' basis functions, taken with the centres of their nuclei placed together
  /// (orthogonal Procrustes: with C_refᵀ S C = U Σ Vᵀ, R = V Uᵀ).
  /// The SCF fixes each orbital only up to its sign (and degenerate ones up to a rotation), so
  /// two close geometries' canonical orbitals can differ in sign, and one network fitted to
  /// both in pretraining cannot fit either (a user audit: LiH at R = 3.015 and 3.2 bohr).
  /// A molecule turned as a whole (`rotation` R: this geometry's nuclei ≈ R times the
  /// reference's, about their centres; train/superposition.hpp) is compared with the reference's
  /// orbitals turned with it (their functions turned by scf::turned_functions): taken in one
  /// frame, the overlap mixed them (a 90-degree turn of LiH pretrained 1.5 Eh above E_HF).
  /// @return the smallest singular value over both spins (1: the occupied spaces coincide),
  /// or NaN when the electron counts differ (nothing rotated).
  double align_orbitals_to(const HartreeFockDeterminant& ref,
                           const Eigen::Matrix3d& rotation = Eigen::Matrix3d::Identity());

 private:
  scf::BasisSet basis_;
  Eigen::MatrixXd c_alpha_, c_beta_;  ///< occupied coefficients [n_basis, n↑], [n_basis, n↓]
  int64_t n_up_, n_down_;
  double energy_;
  scf::GaussianOrbitals alpha_, beta_;
  GaussianBasisTable table64_, table_;  ///< the basis as tensors (float64; in the walkers' dtype)
  torch::Tensor coefficients_[2];       ///< c_alpha_, c_beta_ [n_basis, n_s] in table_'s dtype/device
  std::mutex cache_mutex_;  ///< table_, coefficients_ and the orbitals' dtype are set on first use, maybe by several walker parts
  torch::TensorOptions options_ = torch::kFloat64;
};

}  // namespace nnvmc
