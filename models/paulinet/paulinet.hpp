#pragma once
/// @file paulinet.hpp
/// PauliNet (Hermann, Schätzle, Noé, Nat. Chem. 12, 891 (2020); DeepQMC 0.3):
///   ψ(r) = exp(J_θ(r)) · exp(γ(r)) · det[φ↑_μ(r_i) f_θ,μ(x_i)] · det[φ↓_μ(r_i) f_θ,μ(x_i)]
/// with φ the (cusp-corrected) Hartree–Fock orbitals of the molecule it is built for, x_i the
/// electron embeddings of a SchNet-like graph network, f = 1 + 2 tanh(κ_θ(x_i)/4) the
/// multiplicative backflow, J_θ = η_θ(Σ_i x_i) the Jastrow factor and
/// γ = Σ_{i<j} −c_ij / (α(1 + α r_ij)) (c = ¼ same spin, ½ opposite spin) the electronic cusp.
///
/// The baseline MO coefficients belong to the geometry the model was built for (the SCF runs
/// in the constructor); like `hf`, PauliNet is rebuilt (new SCF) for another geometry, and the
/// network weights of a checkpoint are loaded on top. The nuclei themselves (Gaussian centres,
/// cusp radii and fit) always come from the SystemTensors of the evaluation.
#include <torch/torch.h>

#include <array>
#include <memory>
#include <mutex>

#include "blocks/fwdlap.hpp"
#include "blocks/tensor_blocks.hpp"
#include "core/config.hpp"
#include "core/system.hpp"
#include "models/paulinet/schnet.hpp"
#include "models/wavefunction.hpp"

namespace nnvmc {

/// The PauliNet ansatz (one determinant: the HF ground state). Parameters are float64 after
/// construction; use ->to() for float32.
class PauliNet : public WaveFunction {
 public:
  /// Runs RHF (UHF for open shells or options.unrestricted) in options.basis for `system`.
  PauliNet(const PaulinetOptions& options, const System& system);
  LogPsi forward(const torch::Tensor& r, const SystemTensors& sys) override;  ///< r [B, N, 3]
  SignedFwdLap forward_laplacian(const FwdLap& r, const SystemTensors& sys) override;
  std::string type() const override { return "paulinet"; }
  /// With a frozen baseline: its MO coefficients (mo_coefficients, or _up and _down for UHF).
  std::map<std::string, torch::Tensor> frozen_state() const override;

  /// sign(ψ) [B] and log|ψ| [B] over a tensor-like T (paulinet_body.hpp).
  template <BuildingBlocks T>
  typename Blocks<T>::Signed log_psi(const T& r, const SystemTensors& sys);
  /// The baseline orbitals (with the cusp correction when enabled) of spin s (0 up, 1 down) at
  /// the geometry of `sys`, in the dtype/device of `like`.
  GaussianOrbitalSpec baseline(int spin, const SystemTensors& sys, const torch::Tensor& like);

  double hf_energy() const { return e_hf_; }       ///< E_HF of the baseline SCF (hartree)
  /// {hf_energy(), "RHF/<basis>, the PauliNet baseline"} (UHF for a UHF baseline).
  std::optional<HartreeFockEnergy> built_in_hartree_fock() const override;
  bool restricted() const { return restricted_; }  ///< RHF baseline (one orbital set)
  int64_t n_orbitals() const { return n_orb_; }    ///< O = max(n↑, n↓) orbitals per spin
  /// Trainable parameter counts: {graph network, Jastrow, backflow, cusp shifts, MO coefficients}.
  std::array<int64_t, 5> parameter_counts() const;

 private:
  /// table64_ converted to like's dtype/device (cached).
  const GaussianBasisTable& table_for(const torch::Tensor& like);

  PaulinetOptions options_;
  int64_t n_up_, n_down_, n_atoms_, n_orb_;
  bool restricted_ = true;
  double e_hf_ = 0;
  GaussianBasisTable table64_;              ///< baseline basis (float64, CPU)
  GaussianBasisTable table_;                ///< the same in the dtype/device of the last evaluation
  std::mutex table_mutex_;                  ///< table_ is set on first use, maybe by several walker parts at once
  torch::Tensor coefficients_[2];           ///< [n_basis, O] per spin (RHF: both the same tensor)
  torch::Tensor shifts_[2];                 ///< [M, O] cusp value shifts per spin (or undefined)
  std::vector<std::array<int64_t, 2>> spins_;  ///< [begin, end) of each nonempty spin group
  SchNet schnet_{nullptr};
  Mlp jastrow_{nullptr}, backflow_{nullptr};
};

/// Builds PauliNet for `system` (registry factory).
std::shared_ptr<WaveFunction> make_paulinet(const PaulinetOptions& options, const System& system);

}  // namespace nnvmc
