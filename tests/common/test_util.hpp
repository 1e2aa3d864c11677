#pragma once
/// Helpers shared by the torch-based test executables.
#include <torch/torch.h>

#include <string>

#include "core/config.hpp"
#include "core/system.hpp"
#include "models/system_tensors.hpp"

namespace nnvmc::test {

inline std::string molecules_dir() { return std::string(NNVMC_SOURCE_DIR) + "/configs/molecules"; }

/// A small FermiNet configuration (fast in tests). Also seeds the global RNG: libtorch seeds
/// its default generator nondeterministically, and the network built next draws from it.
inline FermiNetOptions small_ferminet(int width1 = 16, int width2 = 4, int layers = 2, int dets = 2) {
  torch::manual_seed(0);
  FermiNetOptions o;
  o.hidden_dims = std::vector<std::array<int, 2>>(layers, {width1, width2});
  o.determinants = dets;
  return o;
}

/// A small Orbformer for elements H–O (fast in tests); seeds the global RNG like small_ferminet.
/// Two geometries of H2 (R = 1.4 and 2.0 bohr, named h2_short and h2_long) as a `system:` block
/// of a config, for multi-molecule runs.
inline constexpr const char* kTwoH2System =
    "system:\n"
    "  molecules:\n"
    "    - {molecule: h2, name: h2_short}\n"
    "    - {molecule: h2, geometry: [[0, 0, 0], [0, 0, 2.0]], name: h2_long}\n";

inline OrbformerOptions small_orbformer(int dets = 3) {
  torch::manual_seed(0);
  OrbformerOptions o;
  o.elements = "H-O";
  o.heads = 2;
  o.head_dim = 4;
  o.layers = 2;
  o.featurization_heads = 2;
  o.determinants = dets;
  o.envelopes_per_nucleus = 2;
  o.nuclear_feature_dim = 8;
  o.nuclear_layers = 1;
  o.orbital_layers = 1;
  o.orbital_heads = 2;
  o.orbital_head_dim = 4;
  return o;
}

/// A small Psiformer configuration (fast in tests); seeds the global RNG like small_ferminet.
inline PsiformerOptions small_psiformer(int layers = 2, int heads = 2, int head_dim = 4, int dets = 2,
                                        int mlp_width = 8) {
  torch::manual_seed(0);
  PsiformerOptions o;
  o.layers = layers;
  o.heads = heads;
  o.head_dim = head_dim;
  o.mlp_hidden_dims = {mlp_width};
  o.determinants = dets;
  return o;
}

/// Small options for every ansatz in `model` (FermiNet, Psiformer, Orbformer, PauliNet with an
/// STO-6G baseline), so a test can build any model.type fast.
inline void use_small_models(ModelConfig& model) {
  model.ferminet = small_ferminet();
  model.psiformer = small_psiformer();
  model.orbformer = small_orbformer();
  model.paulinet.embedding_dim = 8;
  model.paulinet.kernel_dim = 8;
  model.paulinet.distance_features = 4;
  model.paulinet.basis = "sto-6g";
}

/// Random electron positions around the nuclei: [B, N, 3] float64.
inline torch::Tensor random_positions(const System& s, int64_t b, std::uint64_t seed = 1) {
  torch::manual_seed(seed);
  return torch::randn({b, s.n_electrons(), 3}, torch::kFloat64) * 1.5;
}

/// The molecule as tensors (float64 CPU unless given).
inline SystemTensors tensors(const System& s, torch::Dtype dtype = torch::kFloat64) {
  return system_tensors(s, torch::TensorOptions().dtype(dtype));
}

}  // namespace nnvmc::test
