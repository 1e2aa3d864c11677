#pragma once
/// @file orbformer_body.hpp
/// The electron half of the Orbformer written once over a tensor-like type T through
/// `Blocks<T>`: included by orbformer.cpp (T = torch::Tensor, autograd) and
/// orbformer_fwdlap.cpp (T = FwdLap, the forward Laplacian). The molecule's tensors
/// (OrbformerMolecule) enter as constants.
#include <cmath>

#include "models/orbformer/orbformer.hpp"

namespace nnvmc {

namespace orbformer_detail {
/// A constant [1] tensor broadcast over features.
inline torch::Tensor scalar(double v, const torch::Tensor& like) { return torch::full({1}, v, like.options()); }
}  // namespace orbformer_detail

template <BuildingBlocks T>
T Orbformer::electron_stream(const T& r, const SystemTensors& sys, const OrbformerMolecule& mol) {
  using Op = Blocks<T>;
  using orbformer_detail::scalar;
  const auto& e = *electrons_;
  const auto& like = mol.exponents;
  const int64_t m = sys.n_atoms(), n = sys.n_electrons(), w = e.width, h = e.heads, d = w / h;

  // Electron–nucleus features (oneqmc featurize_real_space_vector with a projected vector):
  // exponentials s·e^{−s|v|} (s = 1, 3), sigmoids σ(t − |v|)/t (t = 2, 4), and v and the
  // nucleus-dependent projection Pv (6 components) times each.
  const auto v = Op::sub_centres(r, sys.nuclei);  // [B, N, M, 3]
  const auto dist = Op::norm(v);                  // [B, N, M, 1]
  std::vector<T> exps, sigs;
  for (double s : {1.0, 3.0})
    exps.push_back(Op::mul_const(Op::exp(Op::mul_const(dist, scalar(-s, like))), scalar(s, like)));
  for (double t : {2.0, 4.0})
    sigs.push_back(Op::mul_const(Op::sigmoid(Op::add_const(Op::mul_const(dist, scalar(-1, like)), scalar(t, like))),
                                 scalar(1 / t, like)));
  const auto pv = Op::reshape_features(
      Op::affine(Op::reshape_features(v, 1, {3 * m}), mol.projection, {}), 1, {m, 6});  // [B, N, M, 6]
  std::vector<T> feats{exps[0], exps[1], sigs[0], sigs[1]};
  for (const auto& x : exps) feats.push_back(Op::mul(v, x));
  for (const auto& x : sigs) feats.push_back(Op::mul(v, x));
  for (const auto& x : sigs) feats.push_back(Op::mul(pv, x));
  for (const auto& x : exps) feats.push_back(Op::mul(pv, x));
  // Edge features gated by spin and nucleus, summed over nuclei, layer-normed per
  // featurisation head (ε = 1), layer-normed (ε = 1e-2) and embedded.
  auto en = Op::mul_const_electrons(Op::linear(e.en_edges, Op::cat(feats)), mol.gate);  // [B, N, M, W]
  const int64_t fh = e.featurization_heads;
  const auto headed = Op::reshape_features(Op::sum_centres(en), 1, {fh, w / fh});  // [B, N, heads, W/heads]
  const auto x = Op::reshape_features(Op::layer_norm(headed, 1.0), 1, {w});
  auto hid = Op::linear(e.encoder, Op::layer_norm(x, 1e-2));  // [B, N, W]

  // Attention bias from electron–electron distances (MaskedMultiHeadSelfAttention with
  // edges): head h adds −|a_h|·r_ij + log σ(8 − r_ij) to its logits.
  T edge_in;
  if (e.edge_features) {
    const auto ree = Op::pair_norm(Op::pair_vectors(r));  // [B, N, N, 1]
    const auto log_sig = Op::mul_const(Op::softplus(Op::add_const(ree, scalar(-8, like))), scalar(-1, like));
    edge_in = Op::cat({ree, log_sig});  // [B, N, N, 2]
  }
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  for (size_t l = 0; l < e.query.size(); ++l) {
    const auto y = Op::layer_norm(hid, 1e-2);
    const auto q = Op::linear(e.query[l], y), k = Op::linear(e.key[l], y), val = Op::linear(e.value[l], y);
    const auto g = Op::sigmoid(Op::linear(e.gate[l], y));
    T bias;
    if (e.edge_features) {
      const auto wb = torch::cat({-e.edge_scale[l].abs(), torch::ones_like(e.edge_scale[l])}, 1);  // [H, 2]
      bias = Op::reshape_features(Op::pair_to_electron(Op::affine(edge_in, wb, {})), 1, {h * n});  // [B, N, H·N]
    }
    std::vector<T> outs;
    for (int64_t hh = 0; hh < h; ++hh) {
      const auto head = [&](const T& x) { return Op::slice_features(x, hh * d, (hh + 1) * d); };
      auto s = Op::electron_dot(head(q), head(k), scale);  // [B, N, N] logits
      if (e.edge_features) s = Op::add(std::move(s), Op::slice_features(bias, hh * n, (hh + 1) * n));
      outs.push_back(Op::mul(Op::electron_mix(Op::softmax(s), head(val)), head(g)));  // [B, N, D], gated
    }
    hid = Op::add(std::move(hid), Op::linear(e.out[l], Op::cat(outs)));
    hid = Op::add(std::move(hid), Op::tanh(Op::linear(e.dense[l], Op::layer_norm(hid, 1e-2))));
  }
  return hid;
}

template <BuildingBlocks T>
T Orbformer::orbitals_electron_major(const T& r, const SystemTensors& sys, const OrbformerMolecule& mol) {
  using Op = Blocks<T>;
  const int64_t m = sys.n_atoms(), n = sys.n_electrons(), k = options_.determinants;
  const int64_t s_env = options_.envelopes_per_nucleus;
  const auto hid = electron_stream(r, sys, mol);  // [B, N, W]
  // Envelopes Σ_m Σ_s c^k_{j,ms} e^{−ζ_ms r_im}: the exponentials are per electron, the
  // coefficients a constant linear map to the K·N orbitals.
  const auto dist = Op::norm(Op::sub_centres(r, sys.nuclei));                                      // [B, N, M, 1]
  const auto expo = Op::reshape_features(Op::exp(Op::mul_const(dist, -mol.exponents)), 1, {m * s_env});  // [B, N, M·S]
  std::vector<T> rows;
  for (const auto& [lo, hi] : sys.spin_ranges()) {
    const int spin = lo == 0 && sys.n_up > 0 ? 0 : 1;
    const auto phi = Op::affine(Op::slice_electrons(hid, 1, lo, hi), mol.orbital_weight[spin], {});    // [B, n_s, K·N]
    const auto env = Op::affine(Op::slice_electrons(expo, 1, lo, hi), mol.envelope_weight[spin], {});  // [B, n_s, K·N]
    rows.push_back(Op::reshape_features(Op::mul(phi, env), 1, {k, n}));  // [B, n_s, K, N]
  }
  return Op::cat_electrons(rows);  // [B, N, K, N]
}

template <BuildingBlocks T>
T Orbformer::jastrow(const T& r, const SystemTensors& sys, const OrbformerMolecule& mol) {
  // J = Σ_{i<j, same spin} −¼ α_s e^{−r_ij/α_s} + Σ_{i<j, opposite} −½ α_o e^{−r_ij/α_o}.
  // Same-spin blocks are summed over all (i, j) and halved; their diagonal (r = 0, a
  // constant −¼ α_s per electron) is removed again.
  using Op = Blocks<T>;
  const auto ree = Op::pair_norm(Op::pair_vectors(r));  // [B, N, N, 1]
  const auto a_same = mol.jastrow_alpha.slice(0, 0, 1), a_opp = mol.jastrow_alpha.slice(0, 1, 2);  // [1]
  auto term = [&](const torch::Tensor& alpha, double c) {
    return Op::mul_const(Op::exp(Op::mul_const(ree, -alpha.reciprocal())), -c * alpha);
  };
  const auto same = term(a_same, 0.25), opp = term(a_opp, 0.5);
  auto block_sum = [&](const T& x, std::array<int64_t, 2> a, std::array<int64_t, 2> b) {
    const auto blk = Op::slice_electrons(Op::slice_electrons(x, 1, a[0], a[1]), 2, b[0], b[1]);
    return Op::sum_electrons(Op::sum_electrons(blk, 2), 1);  // [B, 1]
  };
  const auto spins = sys.spin_ranges();
  std::vector<T> parts;
  for (const auto& s : spins)
    parts.push_back(Op::mul_const(block_sum(same, s, s), orbformer_detail::scalar(0.5, a_same)));
  if (spins.size() == 2) parts.push_back(block_sum(opp, spins[0], spins[1]));
  T j = parts[0];
  for (size_t i = 1; i < parts.size(); ++i) j = Op::add(j, parts[i]);
  j = Op::add_const(j, a_same * (0.125 * static_cast<double>(sys.n_electrons())));
  return Op::sum_features(j);  // [B]
}

template <BuildingBlocks T>
typename Blocks<T>::Signed Orbformer::log_psi(const T& r, const SystemTensors& sys, const OrbformerMolecule& mol) {
  using Op = Blocks<T>;
  const auto det = Op::log_det(orbitals_electron_major(r, sys, mol));  // [B, K]
  auto psi = Op::signed_logsumexp(det.sign, det.logabs);
  psi.logabs = Op::add(psi.logabs, jastrow(r, sys, mol));
  return psi;
}

}  // namespace nnvmc
