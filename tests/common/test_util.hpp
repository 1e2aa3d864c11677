#pragma once
/// Helpers shared by the torch-based test executables.
#include <torch/torch.h>

#include <cstddef>
#include <numeric>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/system.hpp"
#include "models/system_tensors.hpp"

namespace nnvmc::test {

/// r [B, N, 3] with electrons i and j swapped in every walker (a copy).
inline torch::Tensor swap_electrons(const torch::Tensor& r, int64_t i, int64_t j) {
  auto out = r.clone();
  out.select(1, i).copy_(r.select(1, j));
  out.select(1, j).copy_(r.select(1, i));
  return out;
}

/// Adds scale·N(0, 1) (seeded) to every parameter of m: moves them off initial values that
/// hide errors (LayerNorm scales, envelopes and α start at exactly 1, determinants nearly equal).
inline void perturb_parameters(torch::nn::Module& m, double scale, std::uint64_t seed) {
  torch::NoGradGuard ng;
  torch::manual_seed(seed);
  for (auto& p : m.parameters()) p.add_(scale * torch::randn_like(p));
}

/// max |a − b| / (1 + max |b|): a relative difference that stays finite where b vanishes.
inline double rel_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return ((a - b).abs().max() / (1 + b.abs().max())).item<double>();
}

/// Mean of v[lo, hi).
inline double mean_of(const std::vector<double>& v, std::size_t lo, std::size_t hi) {
  return std::accumulate(v.begin() + std::ptrdiff_t(lo), v.begin() + std::ptrdiff_t(hi), 0.0) / double(hi - lo);
}

inline std::string molecules_dir() { return NNVMC_SOURCE_DIR "/configs/molecules"; }

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
