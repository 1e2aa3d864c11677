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
  /// Moves the orbital tables to a dtype/device (GaussianOrbitals are not Module buffers).
  void set_options(torch::TensorOptions options);

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
