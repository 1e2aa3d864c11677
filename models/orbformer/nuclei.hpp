#pragma once
/// @file nuclei.hpp
/// The molecule-dependent half of the Orbformer (oneqmc wf/orbformer/nuclei.py and
/// orbitals.py): nuclear features from a message-passing network over the nuclei, and
/// orbital features from the orbital generator. Everything here depends on the nuclei only
/// (never on electrons), so it runs on plain tensors once per evaluation; its outputs enter
/// the electron part as constants of the electron-coordinate derivatives.
#include <torch/torch.h>

#include <vector>

namespace nnvmc::orbformer {

/// Features of real-space vectors v (oneqmc featurize_real_space_vector without projection):
/// [s·e^{−s|v|} per scale s, σ(t − |v|)/t per shift t, v·(each exp), v·(each sigmoid)].
/// @param v [..., 3] @return [..., S + T + 3S + 3T]
torch::Tensor featurize_vectors(const torch::Tensor& v, const std::vector<double>& shifts,
                                const std::vector<double>& scales);

/// Edge features of nucleus pairs: featurize_vectors(R_s − R_r, shifts {2, 4, 6}, scales {1}).
/// @param nuclei [M, 3] @return [M (sender), M (receiver), 16]
torch::Tensor nuclear_edges(const torch::Tensor& nuclei);

/// Width of nuclear_edges' features.
inline constexpr int64_t kNuclearEdgeFeatures = 16;

/// One message-passing block over nuclei (oneqmc MaskedMPNNBlock): for each receiver r,
/// u_r = LN_heads(Σ_s tanh(A x_r + B x_s)/√2 · [σ((C n_r + D n_s)/√2)] · E e_sr), then
/// x ← x + u, x ← x + tanh(W·[LN](x) (+ b)). Heads split the message width.
/// Two flavours: the nuclear GNN's (layer norm with ε = 1, dense layer without layer norm,
/// with bias) and the orbital generator's (the orbital layer norm: variance maximised over
/// the nuclei, ε = 1; dense layer with it and without bias).
struct NuclearMessagePassingImpl : torch::nn::Module {
  /// @param width feature width (= heads · per-head width) @param heads message heads
  /// @param node_dim width of the nuclear features gating the messages (0: no gate)
  /// @param orbital the orbital generator's flavour
  NuclearMessagePassingImpl(int64_t width, int64_t heads, int64_t node_dim, bool orbital);
  /// @param x [A, M, width] (A = orbitals, or 1) @param edges [M, M, 16] (sender, receiver)
  /// @param node [M, node_dim] or undefined @return [A, M, width]
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& edges, const torch::Tensor& node);
  /// The flavour's layer norm over the last axis (orbital: variance maximised over axis 1).
  torch::Tensor norm(const torch::Tensor& x) const;

  int64_t heads;
  bool orbital;
  torch::nn::Linear edge{nullptr}, receiver{nullptr}, sender{nullptr}, dense{nullptr};
  torch::nn::Linear receiver_node{nullptr}, sender_node{nullptr};
};
TORCH_MODULE(NuclearMessagePassing);

/// Nuclear features (oneqmc NucleiGNN): an embedding per element, `layers` message-passing
/// blocks over the nuclei, a final parameter-free layer norm (ε = 1).
struct NucleiGnnImpl : torch::nn::Module {
  /// @param max_z elements 1..max_z @param dim feature width @param layers, heads blocks
  NucleiGnnImpl(int64_t max_z, int64_t dim, int64_t layers, int64_t heads);
  /// @param charges nuclear charges Z [M] (on the parameters' device) @param edges nuclear_edges
  /// [M, M, 16] @return [M, dim]
  torch::Tensor forward(const torch::Tensor& charges, const torch::Tensor& edges);

  torch::Tensor embedding;  ///< [max_z, dim]
  std::vector<NuclearMessagePassing> blocks;
};
TORCH_MODULE(NucleiGnn);

/// Orbital features (oneqmc OrbitalGenerator): orbital o of the molecule is the o-th
/// "atomic slot" when the nuclei's Z slots are listed in order (nucleus 0's Z_0 slots first);
/// slot k of an element Z is one-hot index Z(Z−1)/2 + k among max_z(max_z+1)/2, embedded on its
/// own nucleus (zero on the others), then `layers` message-passing blocks over the nuclei
/// (one independent graph per orbital) gated by the nuclear features.
struct OrbitalGeneratorImpl : torch::nn::Module {
  /// @param max_z elements 1..max_z @param width heads · per-head width @param node_dim
  /// nuclear feature width
  OrbitalGeneratorImpl(int64_t max_z, int64_t width, int64_t layers, int64_t heads, int64_t node_dim);
  /// @param z atomic numbers (M, host copy: checks) @param charges the same [M] on the
  /// parameters' device @param n_orbitals N ≤ Σ Z @param edges [M, M, 16]
  /// @param nuclear_features [M, node_dim] @return [N, M, width]
  /// @throws InputError when N > Σ Z
  torch::Tensor forward(const std::vector<int>& z, const torch::Tensor& charges, int64_t n_orbitals,
                        const torch::Tensor& edges, const torch::Tensor& nuclear_features);

  int64_t max_z;
  torch::nn::Linear embedding{nullptr};  ///< one-hot slot → features (no bias)
  std::vector<NuclearMessagePassing> blocks;
};
TORCH_MODULE(OrbitalGenerator);

}  // namespace nnvmc::orbformer
