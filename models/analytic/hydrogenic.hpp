#pragma once
/// @file hydrogenic.hpp
/// Analytic test wavefunctions with known local energies.
#include "models/wavefunction.hpp"

namespace nnvmc {

/// Product of 1s orbitals exp(−ζ|r_i − R_0|) on the first nucleus (no antisymmetry).
/// Written once over the building blocks (autograd and forward Laplacian).
/// For one electron on a proton with ζ = 1 this is the exact ground state: E_L = −½.
class Hydrogenic : public WaveFunction {
 public:
  Hydrogenic(const System& system, double zeta);
  LogPsi forward(const torch::Tensor& r, const SystemTensors& sys) override;  ///< r [B, N, 3]
  SignedFwdLap forward_laplacian(const FwdLap& r, const SystemTensors& sys) override;
  std::string type() const override { return "hydrogenic"; }

 private:
  torch::Tensor zeta_;  ///< parameter [] (differentiable, for gradient tests)
};

/// A Slater determinant of spherical Gaussians exp(−α_j|r − c_j|²) per spin (exercises
/// determinants with analytic second derivatives; not an eigenfunction). The centres c_j are
/// the function's own constants, not nuclei.
class GaussianDeterminant : public WaveFunction {
 public:
  /// @param centres [N, 3] Gaussian centres, @param alphas [N] exponents; orbitals per spin
  /// are the first n_up (resp. n_down) of them.
  GaussianDeterminant(const System& system, torch::Tensor centres, torch::Tensor alphas);
  LogPsi forward(const torch::Tensor& r, const SystemTensors& sys) override;
  std::string type() const override { return "gaussian_determinant"; }

 private:
  int64_t n_up_, n_down_;
  torch::Tensor centres_, alphas_;
};

}  // namespace nnvmc
