#pragma once
/// @file orbformer.hpp
/// Orbformer (Foster et al., "An ab initio foundation model of wavefunctions that accurately
/// describes chemical bond breaking", arXiv:2506.19960; microsoft/oneqmc wf/orbformer,
/// OrbformerSE): one set of weights for any molecule of the supported elements. A
/// molecule-dependent half reads only the nuclei (nuclear GNN + orbital generator, nuclei.hpp)
/// and emits the orbital projections, envelope coefficients and exponents; the electron half
/// (an electron transformer with electron–nucleus featurisation and electron–electron
/// distance-biased attention) is written once over Blocks<T> (orbformer_body.hpp) and takes
/// those as constants. ψ = Σ_k det[φ^k] · e^J with K full N×N determinants and oneqmc's
/// exponential electron–electron Jastrow J.
#include <torch/torch.h>

#include <array>

#include "blocks/fwdlap.hpp"
#include "blocks/tensor_blocks.hpp"
#include "core/config.hpp"
#include "models/orbformer/nuclei.hpp"
#include "models/wavefunction.hpp"

namespace nnvmc {

/// Everything of the Orbformer that depends on the molecule (nuclei, Z, n↑, n↓) but not on
/// the electrons: computed once per evaluation on plain tensors (differentiable in the
/// parameters), constants for the electron-coordinate derivatives. N = n↑ + n↓ orbitals,
/// M nuclei, W electron feature width, K determinants, S envelopes per nucleus.
struct OrbformerMolecule {
  torch::Tensor nuclear_features;                 ///< [M, D] nuclear GNN output
  torch::Tensor gate;                             ///< [N, M, W] σ((spin embedding_i + L·n_m)/√2)
  torch::Tensor projection;                       ///< [6M, 3M] block-diagonal map of r_i − R_m (per nucleus, /√3)
  torch::Tensor exponents;                        ///< [M, S] envelope exponents ζ (per element)
  std::array<torch::Tensor, 2> orbital_weight;    ///< per spin [K·N, W]: row k·N + j gives orbital j of det k
  std::array<torch::Tensor, 2> envelope_weight;   ///< per spin [K·N, M·S]: coefficients of e^{−ζ_ms r_im}
  torch::Tensor jastrow_alpha;                    ///< [2] softplus'ed α_same, α_opposite
};

/// The electron half's own parameters (electron–nucleus featurisation, transformer blocks).
struct OrbformerElectronsImpl : torch::nn::Module {
  OrbformerElectronsImpl(const OrbformerOptions& o);
  int64_t width, heads, featurization_heads;
  bool edge_features;
  torch::nn::Linear en_edges{nullptr};  ///< 40 e–n features → W (no bias)
  torch::nn::Linear encoder{nullptr};   ///< W → W after the layer norms
  std::vector<torch::nn::Linear> query, key, value, gate, out, dense;  ///< per block
  std::vector<torch::Tensor> edge_scale;                               ///< per block [H, 1]
};
TORCH_MODULE(OrbformerElectrons);

/// The Orbformer ansatz. Parameters are float64 after construction; use ->to() for float32.
class Orbformer : public WaveFunction {
 public:
  explicit Orbformer(const OrbformerOptions& options);
  LogPsi forward(const torch::Tensor& r, const SystemTensors& sys) override;  ///< r [B, N, 3]
  /// [B, K, N, N], element (i, j) = orbital j of determinant k at electron i, times e^{J/N}
  /// (oneqmc's return_mos with the Jastrow included), so det = the k-th term of ψ.
  torch::Tensor orbitals(const torch::Tensor& r, const SystemTensors& sys) override;
  SignedFwdLap forward_laplacian(const FwdLap& r, const SystemTensors& sys) override;
  torch::Tensor determinant_log_weights(const torch::Tensor& r, const SystemTensors& sys) override;
  std::string type() const override { return "orbformer"; }
  bool transferable() const override { return true; }
  /// Elements within `elements`, 1 ≤ N ≤ Σ Z. @throws InputError naming the problem.
  void check_system(const SystemTensors& sys) const override;

  /// The molecule-dependent tensors (nuclei only; differentiable in the parameters).
  /// @param sys tensors in the parameters' dtype/device
  OrbformerMolecule molecule(const SystemTensors& sys);
  /// Output of the electron transformer [B, N, W] (permutation-equivariant in same-spin electrons).
  torch::Tensor electron_features(const torch::Tensor& r, const SystemTensors& sys);
  /// Number of scalar parameters.
  int64_t parameter_count() const;
  const OrbformerOptions& options() const { return options_; }

  /// The electron half written once over T (orbformer_body.hpp).
  /// @param r Blocks<T>::positions([B, N, 3]) @return electron features [B, N, W]
  template <BuildingBlocks T>
  T electron_stream(const T& r, const SystemTensors& sys, const OrbformerMolecule& mol);
  /// Orbitals electron-major [B, N, K, N] (row i = electron i), without the Jastrow.
  template <BuildingBlocks T>
  T orbitals_electron_major(const T& r, const SystemTensors& sys, const OrbformerMolecule& mol);
  /// The electron–electron Jastrow J [B] (global).
  template <BuildingBlocks T>
  T jastrow(const T& r, const SystemTensors& sys, const OrbformerMolecule& mol);
  /// sign(ψ) [B] and log|ψ| [B].
  template <BuildingBlocks T>
  typename Blocks<T>::Signed log_psi(const T& r, const SystemTensors& sys, const OrbformerMolecule& mol);

 private:
  OrbformerOptions options_;
  int64_t max_z_;
  orbformer::NucleiGnn nuclei_{nullptr};
  orbformer::OrbitalGenerator generator_{nullptr};
  OrbformerElectrons electrons_{nullptr};
  torch::nn::Linear projection_{nullptr};    ///< nuclear features → 6×3 matrix per nucleus
  torch::Tensor spin_embedding_;             ///< [2, W] rows: spin down, spin up
  torch::nn::Linear sender_nuclei_{nullptr};  ///< nuclear features → W (gate)
  std::array<torch::nn::Linear, 2> orbital_gate_{nullptr, nullptr};      ///< per spin, Wo → Wo
  std::array<torch::nn::Linear, 2> envelope_coef_{nullptr, nullptr};     ///< per spin, Wo → S·K
  std::array<torch::nn::Linear, 2> orbital_projection_{nullptr, nullptr};  ///< per spin, Wo → W·K
  torch::Tensor exponent_embedding_;  ///< [max_z, S] ζ = 0.1 + softplus(·)
  torch::Tensor jastrow_alpha_;       ///< [2] α = softplus(·)
};

}  // namespace nnvmc
