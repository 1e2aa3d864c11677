#pragma once
/// @file ferminet_body.hpp
/// FermiNet written once over a tensor-like type T through `Blocks<T>`: included by
/// ferminet.cpp (T = torch::Tensor, autograd) and by the forward Laplacian (T = FwdLap).
#include "core/errors.hpp"
#include "models/ferminet/ferminet.hpp"

namespace nnvmc {

template <class T>
std::pair<T, T> FermiNetLayerImpl::apply(const T& h1, const T& h2,
                                         const std::vector<std::array<int64_t, 2>>& spins) {
  using Op = Blocks<T>;
  std::vector<T> per_electron{h1}, means;
  for (const auto& s : spins) {
    per_electron.push_back(Op::mean_electrons(Op::slice_electrons(h2, 2, s[0], s[1]), 2));  // [B, N, in2]
    means.push_back(Op::mean_electrons(Op::slice_electrons(h1, 1, s[0], s[1]), 1));        // [B, in1]
  }
  // The mean weights act on [B, in1] before broadcasting over electrons.
  auto out1 = Op::tanh(Op::add_global(Op::linear_cat(one, per_electron), Op::linear_cat(mean, means)));
  if (residual1) out1 = Op::add(std::move(out1), h1);
  T out2;
  if (two) {
    out2 = Op::tanh(Op::linear(two, h2));
    if (residual2) out2 = Op::add(std::move(out2), h2);
  }
  return {out1, out2};
}

template <BuildingBlocks T>
T FermiNet::orbitals_electron_major(const T& r, const SystemTensors& sys) {
  using Op = Blocks<T>;
  const int64_t n = n_up_ + n_down_, k = *options_.determinants;
  const auto ae = Op::sub_centres(r, sys.nuclei);  // [B, N, M, 3]
  const auto r_ae = Op::norm(ae);                // [B, N, M, 1]
  const auto ee = Op::pair_vectors(r);           // [B, N, N, 3]
  const auto r_ee = Op::pair_norm(ee);           // [B, N, N, 1]
  auto h1 = Op::reshape_features(Op::cat({ae, r_ae}), 1, {4 * n_atoms_});  // [B, N, 4M]
  auto h2 = Op::cat({ee, r_ee});                                          // [B, N, N, 4]
  for (auto& layer : layers_) std::tie(h1, h2) = layer->template apply<T>(h1, h2, spins_);

  std::vector<T> rows;
  const auto dist = Op::reshape_features(r_ae, 1, {n_atoms_});  // [B, N, M]
  for (size_t s = 0; s < spins_.size(); ++s) {
    const auto [lo, hi] = spins_[s];
    const auto phi = Op::linear(projections_[s], Op::slice_electrons(h1, 1, lo, hi));  // [B, n_s, K·N]
    const auto env = Op::envelope(Op::slice_electrons(dist, 1, lo, hi), env_pi_[s], env_sigma_[s]);
    rows.push_back(Op::reshape_features(Op::mul(phi, env), 1, {k, n}));  // [B, n_s, K, N]
  }
  return Op::cat_electrons(rows);  // [B, N, K, N]
}

template <BuildingBlocks T>
typename Blocks<T>::Signed FermiNet::log_psi(const T& r, const SystemTensors& sys) {
  using Op = Blocks<T>;
  const auto det = Op::log_det(orbitals_electron_major(r, sys));  // [B, K]
  return Op::signed_logsumexp(det.sign, det.logabs);
}

}  // namespace nnvmc
