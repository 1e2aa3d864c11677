#pragma once
/// @file ferminet.hpp
/// FermiNet (Pfau, Spencer, Matthews, Foulkes, Phys. Rev. Research 2, 033429 (2020)):
/// one- and two-electron streams mixed through per-spin means, K full N×N determinants
/// with isotropic exponential envelopes.
#include <torch/torch.h>

#include "core/config.hpp"
#include "core/system.hpp"
#include "blocks/fwdlap.hpp"
#include "blocks/tensor_blocks.hpp"
#include "models/wavefunction.hpp"

namespace nnvmc {

/// One FermiNet layer: h_i ← tanh(W·[h_i, g↑_i, g↓_i] + U·[mean↑ h, mean↓ h] + b) (+ h_i),
/// h_ij ← tanh(V·h_ij + c) (+ h_ij). The mean terms are multiplied by their weights before
/// broadcasting over electrons, so the concatenated [B, N, ·] input is never built.
struct FermiNetLayerImpl : torch::nn::Module {
  /// @param in1/in2 input widths, out1/out2 output widths, n_spins number of nonempty spins,
  /// @param has_two false for the last layer (no two-electron output)
  FermiNetLayerImpl(int in1, int in2, int out1, int out2, int n_spins, bool has_two);
  /// @param h1 [B, N, in1] @param h2 [B, N, N, in2] @param spins electron ranges per spin
  /// @return h1 [B, N, out1], h2 [B, N, N, out2] (undefined for the last layer)
  std::pair<torch::Tensor, torch::Tensor> forward(const torch::Tensor& h1, const torch::Tensor& h2,
                                                  const std::vector<std::array<int64_t, 2>>& spins);
  /// The same layer on any tensor-like type with `Blocks<T>` (ferminet_body.hpp).
  template <class T>
  std::pair<T, T> apply(const T& h1, const T& h2, const std::vector<std::array<int64_t, 2>>& spins);
  torch::nn::Linear one{nullptr}, mean{nullptr}, two{nullptr};
  bool residual1, residual2;
};
TORCH_MODULE(FermiNetLayer);

/// The FermiNet ansatz. Parameters are float64 after construction; use ->to() for float32.
class FermiNet : public WaveFunction {
 public:
  FermiNet(const FermiNetOptions& options, const System& system);
  LogPsi forward(const torch::Tensor& r, const SystemTensors& sys) override;          ///< r [B, N, 3]
  torch::Tensor orbitals(const torch::Tensor& r, const SystemTensors& sys) override;  ///< [B, K, N, N]
  SignedFwdLap forward_laplacian(const FwdLap& r, const SystemTensors& sys) override;
  std::string type() const override { return "ferminet"; }

  /// The ansatz written once over a tensor-like T (torch::Tensor, FwdLap); defined in
  /// ferminet_body.hpp. @param r positions `Blocks<T>::positions([B, N, 3])`
  /// @return orbitals electron-major [B, N, K, N] (row i = electron i)
  template <BuildingBlocks T>
  T orbitals_electron_major(const T& r, const SystemTensors& sys);
  /// sign(ψ) [B] and log|ψ| [B] over T (K determinants combined by signed log-sum-exp).
  template <BuildingBlocks T>
  typename Blocks<T>::Signed log_psi(const T& r, const SystemTensors& sys);

 private:
  FermiNetOptions options_;
  int64_t n_up_, n_down_, n_atoms_;
  std::vector<std::array<int64_t, 2>> spins_;  ///< [begin, end) of each nonempty spin group
  std::vector<FermiNetLayer> layers_;
  std::vector<torch::nn::Linear> projections_;  ///< per spin: H → K·N orbital values
  std::vector<torch::Tensor> env_pi_, env_sigma_;  ///< per spin: [K·N, M]
};

}  // namespace nnvmc
