#pragma once
/// @file schnet_body.hpp
/// PauliNet's graph network written once over a tensor-like T through `Blocks<T>`; included by
/// paulinet.cpp, which instantiates it for torch::Tensor (autograd) and FwdLap.
#include <cmath>

#include "models/paulinet/schnet.hpp"

namespace nnvmc {

namespace paulinet_detail {
inline torch::TensorOptions options_of(const torch::Tensor& x) { return x.options(); }
inline torch::TensorOptions options_of(const FwdLap& x) { return x.value.options(); }
/// Shifted softplus log(1 + eˣ) − log 2 (zero at x = 0).
template <class T>
T ssp(const T& x) {
  return Blocks<T>::add_const(Blocks<T>::softplus(x), torch::full({1}, -std::log(2.0), options_of(x)));
}
}  // namespace paulinet_detail

template <class T>
T MlpImpl::apply(const T& x) const {
  T y = Blocks<T>::linear(layers[0], x);
  for (size_t k = 1; k < layers.size(); ++k) y = Blocks<T>::linear(layers[k], paulinet_detail::ssp(y));
  return y;
}

template <class T>
T SchNetImpl::distance_features(const T& d) const {
  using Op = Blocks<T>;
  const auto opts = paulinet_detail::options_of(d);
  const auto m = mu.to(opts), s = inv_sigma2.to(opts);
  const auto minus_one = -torch::ones({1}, opts);
  const auto envelope = Op::mul(Op::square(d), Op::exp(Op::mul_const(d, minus_one)));  // d² e^{−d}, [..., 1]
  const auto centred = Op::affine(d, torch::ones({m.size(0), 1}, opts), -m);           // d − μ_k
  return Op::mul(envelope, Op::exp(Op::mul_const(Op::square(centred), -s)));         // [..., features]
}

template <class T>
T SchNetImpl::apply(const T& r, const T& d_ee, const SystemTensors& sys) const {
  using Op = Blocks<T>;
  const auto opts = paulinet_detail::options_of(r);
  const int64_t n = n_up + n_down;
  std::vector<std::array<int64_t, 2>> spins;
  if (n_up > 0) spins.push_back({0, n_up});
  if (n_down > 0) spins.push_back({n_up, n});
  const auto e_nuc = distance_features(Op::norm(Op::sub_centres(r, sys.nuclei)));  // [B, N, M, Q]
  const auto e_ee = distance_features(d_ee);                                       // [B, N, N, Q]
  // Same-spin sums leave out j = i.
  std::vector<torch::Tensor> self_mask;
  for (const auto& s : spins) self_mask.push_back(1 - torch::eye(s[1] - s[0], opts));
  const auto y = nuclear_embedding.to(opts);
  // Row 0 of X for spin-up electrons, the last row for spin-down ones (no index tensor: nothing
  // from the host in the pass).
  const int64_t dim = electron_embedding.size(1);
  const auto rows = torch::cat({electron_embedding.select(0, 0).expand({n_up, dim}),
                                electron_embedding.select(0, electron_embedding.size(0) - 1).expand({n_down, dim})});
  T x = Op::constant_electrons(r, rows);  // [B, N, D]
  for (const auto& layer : layers) {
    const auto h = Op::linear(layer->h, x);                                                        // [B, N, K]
    const auto z_nuc = Op::sum_feature_axis(Op::mul_const(layer->w_nuc->apply(e_nuc), y), -2);  // [B, N, K]
    std::vector<T> updates;
    for (size_t a = 0; a < spins.size(); ++a) {
      const auto [lo, hi] = spins[a];
      T update = Op::linear(layer->g_nuc, Op::slice_electrons(z_nuc, 1, lo, hi));
      for (size_t b = 0; b < spins.size(); ++b) {
        const auto [lo2, hi2] = spins[b];
        const auto e = Op::slice_electrons(Op::slice_electrons(e_ee, 1, lo, hi), 2, lo2, hi2);
        const bool same = a == b;
        const auto w = (same ? layer->w_same : layer->w_anti)->apply(e);  // [B, n_a, n_b, K]
        const auto z = Op::pair_conv(w, Op::slice_electrons(h, 1, lo2, hi2), same ? self_mask[a] : torch::Tensor());
        update = Op::add(std::move(update), Op::linear(same ? layer->g_same : layer->g_anti, z));
      }
      updates.push_back(std::move(update));
    }
    x = Op::add(std::move(x), Op::cat_electrons(updates));
  }
  return x;
}

}  // namespace nnvmc
