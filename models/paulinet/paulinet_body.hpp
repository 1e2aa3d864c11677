#pragma once
/// @file paulinet_body.hpp
/// PauliNet written once over a tensor-like T through `Blocks<T>`: included by paulinet.cpp,
/// which instantiates it for torch::Tensor (autograd) and FwdLap (forward Laplacian).
#include "models/paulinet/paulinet.hpp"
#include "models/paulinet/schnet_body.hpp"

namespace nnvmc {

template <BuildingBlocks T>
typename Blocks<T>::Signed PauliNet::log_psi(const T& r, const SystemTensors& sys) {
  using Op = Blocks<T>;
  const auto opts = paulinet_detail::options_of(r);
  const auto like = torch::empty({0}, opts);
  const bool network = options_.jastrow || options_.backflow;
  const bool pairs = network || options_.cusp_electrons;
  T d_ee;
  if (pairs) d_ee = Op::pair_norm(Op::pair_vectors(r));  // [B, N, N, 1]

  // Baseline orbitals φ_μ(r_i) per spin group: [B, n_s, O].
  std::vector<T> phi;
  if (restricted_) {
    const auto all = Op::gaussian_orbitals(r, baseline(0, sys, like));
    for (const auto& s : spins_) phi.push_back(Op::slice_electrons(all, 1, s[0], s[1]));
  } else {
    for (const auto& s : spins_)
      phi.push_back(Op::gaussian_orbitals(Op::slice_electrons(r, 1, s[0], s[1]), baseline(s[0] == 0 ? 0 : 1, sys, like)));
  }

  T jastrow, backflow;
  if (network) {
    const auto x = schnet_->apply(r, d_ee, sys);  // [B, N, D]
    if (options_.jastrow) jastrow = jastrow_->apply(Op::sum_electrons(x, 1));  // [B, 1]
    if (options_.backflow) {
      // f = 1 + 2 tanh(κ(x)/4), [B, N, O]
      const auto k = Op::tanh(Op::mul_const(backflow_->apply(x), torch::full({1}, 0.25, opts)));
      backflow = Op::add_const(Op::mul_const(k, torch::full({1}, 2.0, opts)), torch::ones({1}, opts));
    }
  }

  // det[φ_μ(r_i) f_μ(x_i)] per spin; log|ψ| collects as a global [B, 1].
  torch::Tensor sign;
  T total;
  bool first = true;
  auto accumulate = [&](const T& term) {
    total = first ? term : Op::add(std::move(total), term);
    first = false;
  };
  for (size_t s = 0; s < spins_.size(); ++s) {
    const int64_t lo = spins_[s][0], hi = spins_[s][1], n_s = hi - lo;
    T m = phi[s];
    if (options_.backflow) m = Op::mul(m, Op::slice_electrons(backflow, 1, lo, hi));
    m = Op::reshape_features(Op::slice_features(m, 0, n_s), 1, {1, n_s});  // [B, n_s, 1, n_s]
    const auto det = Op::log_det(m);                                         // [B, 1]
    sign = sign.defined() ? sign * det.sign : det.sign;
    accumulate(det.logabs);
  }
  if (options_.jastrow) accumulate(jastrow);
  if (options_.cusp_electrons) {
    // γ = Σ_{i<j} −c/(α(1 + α r_ij)): the same-spin blocks count each pair twice and include
    // the diagonal (r_ii = 0, a constant −c/α per electron).
    const double alpha = options_.cusp_alpha;
    for (size_t a = 0; a < spins_.size(); ++a)
      for (size_t b = a; b < spins_.size(); ++b) {
        const bool same = a == b;
        const double c = same ? 0.25 : 0.5;
        const auto block = Op::slice_electrons(Op::slice_electrons(d_ee, 1, spins_[a][0], spins_[a][1]), 2,
                                               spins_[b][0], spins_[b][1]);
        const auto g = Op::reciprocal(Op::add_const(Op::mul_const(block, torch::full({1}, alpha, opts)),
                                                    torch::ones({1}, opts)));  // 1/(1 + α r)
        auto sum = Op::sum_electrons(Op::sum_electrons(g, 2), 1);             // [B, 1]
        const int64_t n_a = spins_[a][1] - spins_[a][0];
        if (same)
          sum = Op::mul_const(Op::add_const(sum, torch::full({1}, -static_cast<double>(n_a), opts)),
                              torch::full({1}, -0.5 * c / alpha, opts));
        else
          sum = Op::mul_const(sum, torch::full({1}, -c / alpha, opts));
        accumulate(sum);
      }
  }
  return Op::signed_logsumexp(sign, total);
}

}  // namespace nnvmc
