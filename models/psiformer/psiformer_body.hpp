#pragma once
/// @file psiformer_body.hpp
/// Psiformer written once over a tensor-like type T through `Blocks<T>`: instantiated in
/// psiformer.cpp for T = torch::Tensor (autograd) and T = FwdLap (forward Laplacian).
#include <cmath>

#include "models/psiformer/psiformer.hpp"

namespace nnvmc {

template <class T>
T PsiformerLayerImpl::apply(const T& x) {
  using Op = Blocks<T>;
  const int64_t d = q->weight.size(0), dh = d / heads;
  const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
  const auto qx = Op::linear(q, x), kx = Op::linear(k, x), vx = Op::linear(v, x);  // [B, N, D]
  std::vector<T> per_head;
  for (int64_t h = 0; h < heads; ++h) {
    const int64_t lo = h * dh, hi = lo + dh;
    const auto a = Op::softmax(Op::electron_dot(Op::slice_features(qx, lo, hi),
                                                Op::slice_features(kx, lo, hi), scale));  // [B, N, N]
    per_head.push_back(Op::electron_mix(a, Op::slice_features(vx, lo, hi)));           // [B, N, dh]
  }
  auto norm = [&](T y, int i) {
    return layer_norm ? Op::add_const(Op::mul_const(Op::layer_norm(y), norm_scale[i]), norm_offset[i]) : y;
  };
  auto f = norm(Op::add(Op::linear(out, Op::cat(per_head)), x), 0);
  T m = f;
  for (auto& lin : mlp) m = Op::tanh(Op::linear(lin, m));
  return norm(Op::add(std::move(m), f), 1);
}

template <BuildingBlocks T>
T Psiformer::electron_features(const T& r, const SystemTensors& sys) {
  using Op = Blocks<T>;
  const int64_t m = n_atoms_;
  const auto ae = Op::sub_centres(r, sys.nuclei);  // [B, N, M, 3]
  const auto dist = Op::norm(ae);                  // [B, N, M, 1]
  const auto log_dist = Op::log1p(dist);           // log(1 + r): grows as log r
  const auto rescaled = Op::mul(ae, Op::mul(log_dist, Op::reciprocal(dist)));  // r·log(1 + r)/r
  const auto features = Op::reshape_features(Op::cat({rescaled, log_dist}), 1, {4 * m});  // [B, N, 4M]
  // The spin s_i = ±1 is the last input feature: its embedding column times s_i is a
  // per-electron constant [N, D] added after the matmul.
  const auto spin = torch::cat({torch::ones({n_up_, 1}, embed_.options()),
                                -torch::ones({n_down_, 1}, embed_.options())});
  auto x = Op::add_const(Op::affine(features, embed_.narrow(1, 0, 4 * m), {}),
                         spin * embed_.select(1, 4 * m));  // [B, N, D]
  for (auto& layer : layers_) x = layer->template apply<T>(x);
  return x;
}

template <BuildingBlocks T>
T Psiformer::orbitals_electron_major(const T& r, const SystemTensors& sys) {
  using Op = Blocks<T>;
  const int64_t n = n_up_ + n_down_, k = options_.determinants;
  const auto x = electron_features(r, sys);                                       // [B, N, D]
  const auto dist = Op::reshape_features(Op::norm(Op::sub_centres(r, sys.nuclei)), 1, {n_atoms_});  // [B, N, M]
  std::vector<T> rows;
  for (size_t s = 0; s < spins_.size(); ++s) {
    const auto [lo, hi] = spins_[s];
    const auto phi = Op::linear(projections_[s], Op::slice_electrons(x, 1, lo, hi));  // [B, n_s, K·N]
    const auto env = Op::envelope(Op::slice_electrons(dist, 1, lo, hi), env_pi_[s], env_sigma_[s]);
    rows.push_back(Op::reshape_features(Op::mul(phi, env), 1, {k, n}));  // [B, n_s, K, N]
  }
  return Op::cat_electrons(rows);  // [B, N, K, N]
}

template <BuildingBlocks T>
T Psiformer::jastrow(const T& r) {
  using Op = Blocks<T>;
  const auto r_ee = Op::pair_norm(Op::pair_vectors(r));  // [B, N, N, 1], zero diagonal
  // Σ over a block of pairs of −c·α²/(α + r_ij) → [B]
  auto block = [&](int64_t lo1, int64_t hi1, int64_t lo2, int64_t hi2, const torch::Tensor& alpha, double c) {
    const auto rij = Op::slice_electrons(Op::slice_electrons(r_ee, 1, lo1, hi1), 2, lo2, hi2);
    const auto f = Op::mul_const(Op::reciprocal(Op::add_const(rij, alpha)), -c * alpha.square());
    return Op::sum_features(Op::sum_electrons(Op::sum_electrons(f, 2), 1));
  };
  std::vector<T> terms;
  for (const auto& [lo, hi] : spins_) {
    const int64_t ns = hi - lo;
    if (ns < 2) continue;
    // Σ_{i<j} f(r_ij) = ½ Σ_{i,j} f(r_ij) − ½ Σ_i f(0), and f(0) = −¼α∥ (r_ii is exactly 0
    // with zero derivatives): the diagonal comes back as a constant in r (not in α∥).
    const auto all = block(lo, hi, lo, hi, alpha_same_, 0.25);
    terms.push_back(Op::add_const(Op::mul_const(all, torch::full({1}, 0.5, alpha_same_.options())),
                                  alpha_same_ * (0.125 * static_cast<double>(ns))));
  }
  if (n_up_ > 0 && n_down_ > 0) terms.push_back(block(0, n_up_, n_up_, n_up_ + n_down_, alpha_opposite_, 0.5));
  if (terms.empty()) return {};
  T sum = terms[0];
  for (size_t i = 1; i < terms.size(); ++i) sum = Op::add(sum, terms[i]);
  return sum;
}

template <BuildingBlocks T>
typename Blocks<T>::Signed Psiformer::log_psi(const T& r, const SystemTensors& sys) {
  using Op = Blocks<T>;
  const auto det = Op::log_det(orbitals_electron_major(r, sys));  // [B, K]
  auto out = Op::signed_logsumexp(det.sign, det.logabs);
  if (alpha_same_.defined() && n_up_ + n_down_ > 1) out.logabs = Op::add(out.logabs, jastrow(r));
  return out;
}

}  // namespace nnvmc
