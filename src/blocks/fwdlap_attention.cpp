/// @file fwdlap_attention.cpp
/// Forward-Laplacian ops of attention-based ansätze: layer normalisation, attention scores,
/// softmax and the attention-weighted sum over electrons.
#include <algorithm>
#include <cmath>

#include "blocks/fwdlap.hpp"
#include "blocks/fwdlap_detail.hpp"

namespace nnvmc {

using namespace fwdlap_detail;
using Op = Blocks<FwdLap>;

namespace {
/// Mean over the last (feature) axis, kept as size 1.
FwdLap mean_features(const FwdLap& x) {
  return like(x, x.value.mean(-1, true), x.jac.mean(-1, true), x.lap.mean(-1, true));
}
/// x as dense (local → dense; dense and global unchanged). Pair values are not supported.
FwdLap dense_or_global(const FwdLap& x, const char* op) {
  require(x.kind != Sparsity::pair, std::string(op) + " of pair features");
  return x.kind == Sparsity::local ? x.to_dense() : x;
}
}  // namespace

FwdLap Op::layer_norm(const FwdLap& x) { return layer_norm(x, kLayerNormEps); }

FwdLap Op::layer_norm(const FwdLap& x, double eps) {
  // y = c · (var + ε)^(−1/2) with c = x − mean(x), var = mean(c²): products and an
  // elementwise power of quantities in x's own layout.
  const FwdLap c = add(x, mul_const(mean_features(x), -torch::ones({1}, x.value.options())));
  const FwdLap var = mean_features(square(c));
  const auto s = var.value + eps;
  const auto inv = s.rsqrt();
  const auto d1 = -0.5 * inv / s, d2 = 0.75 * inv / (s * s);
  return mul(c, elementwise(var, inv, d1, d2));
}

namespace {

/// electron_dot of one-electron (local) q and k: the scores' Jacobian is built from the
/// [B, E, 3, F] blocks directly (∂s_ij touches only electrons i and j), without making q and k
/// dense first; the second-order cross term lives on the pairs where i and j are one electron.
FwdLap electron_dot_local(const FwdLap& q, const FwdLap& k, double scale) {
  const int64_t b = q.value.size(0), e = q.value.size(1), e2 = k.value.size(1), n = q.n_coords / 3;
  const auto kt = k.value.transpose(1, 2);                                         // [B, F, E']
  auto value = torch::matmul(q.value, kt) * scale;                                 // [B, E, E']
  auto jac = torch::zeros({b, e, n, 3, e2}, q.value.options());                    // [B, E, N, 3, E']
  auto dense = jac.view({b, e, 3 * n, e2});
  // ∂/∂r_i of q_i·k_j: the own-electron block of row i
  own_view(dense, q.offset, e).add_((torch::matmul(q.jac, kt.unsqueeze(1)) * scale).movedim(1, -1));
  // ∂/∂r_j of q_i·k_j: entry (row i, electron j, column j)
  jac.narrow(2, k.offset, e2).diagonal(0, 2, 4).add_(torch::einsum("bif,bjdf->bidj", {q.value, k.jac}) * scale);
  auto lap = (torch::matmul(q.lap, kt) + torch::matmul(q.value, k.lap.transpose(1, 2))) * scale;
  // 2 Σ_c ∂_c q_i·∂_c k_j ≠ 0 only where row i and column j are the same electron
  const int64_t lo = std::max(q.offset, k.offset), hi = std::min(q.offset + e, k.offset + e2);
  if (lo < hi) {
    const auto cross = (q.jac.narrow(1, lo - q.offset, hi - lo) * k.jac.narrow(1, lo - k.offset, hi - lo)).sum({2, 3});
    lap.narrow(1, lo - q.offset, hi - lo).narrow(2, lo - k.offset, hi - lo).diagonal(0, 1, 2).add_(2 * scale * cross);
  }
  FwdLap out = like(q, std::move(value), std::move(dense), std::move(lap));
  out.kind = Sparsity::dense;
  return out;
}

/// electron_mix of dense weights a [B, E, E'] and one-electron (local) values v [B, E', F]:
/// Σ_j a_ij ∂v_j touches only electron j, so v's Jacobian is never made dense.
FwdLap electron_mix_local(const FwdLap& a, const FwdLap& v) {
  const int64_t b = a.value.size(0), e = a.value.size(1), e2 = v.value.size(1), n = a.n_coords / 3,
                f = v.value.size(2);
  auto value = torch::matmul(a.value, v.value);                             // [B, E, F]
  auto jac = torch::matmul(a.jac, v.value.unsqueeze(1));                    // [B, E, 3N, F]
  auto blocks = jac.view({b, e, n, 3, f}).narrow(2, v.offset, e2);          // [B, E, E', 3, F]
  blocks.add_(a.value.unsqueeze(-1).unsqueeze(-1) * v.jac.unsqueeze(1));    // a_ij ∂v_j
  // 2 Σ_j Σ_d ∂_(j,d) a_ij ∂_(j,d) v_jf: a's derivative along electron j in column j
  const auto a_own = a.jac.reshape({b, e, n, 3, e2}).narrow(2, v.offset, e2).diagonal(0, 2, 4);  // [B, E, 3, E']
  const auto cross = torch::einsum("bidj,bjdf->bif", {a_own, v.jac});
  auto lap = torch::matmul(a.lap, v.value) + torch::matmul(a.value, v.lap) + 2 * cross;
  return like(a, std::move(value), std::move(jac), std::move(lap));
}

}  // namespace

FwdLap Op::electron_dot(const FwdLap& q_in, const FwdLap& k_in, double scale) {
  if (q_in.kind == Sparsity::local && k_in.kind == Sparsity::local) return electron_dot_local(q_in, k_in, scale);
  const FwdLap q = dense_or_global(q_in, "electron_dot"), k = dense_or_global(k_in, "electron_dot");
  require(q.kind == Sparsity::dense && k.kind == Sparsity::dense, "electron_dot needs electron features");
  const int64_t b = q.value.size(0), e = q.value.size(1), e2 = k.value.size(1), n = q.n_coords, f = q.value.size(2);
  const auto kt = k.value.transpose(1, 2);  // [B, F, E']
  auto value = torch::matmul(q.value, kt) * scale;                                             // [B, E, E']
  auto jac = (torch::matmul(q.jac, kt.unsqueeze(1)) +                                          // [B, E, 3N, E']
              torch::einsum("bif,bjcf->bicj", {q.value, k.jac})) * scale;
  // Σ_c Σ_f ∂_c q_if ∂_c k_jf as one batched product over (c, f)
  const auto cross = torch::matmul(q.jac.reshape({b, e, n * f}), k.jac.reshape({b, e2, n * f}).transpose(1, 2));
  auto lap = (torch::matmul(q.lap, kt) + torch::matmul(q.value, k.lap.transpose(1, 2)) + 2 * cross) * scale;
  return like(q, std::move(value), std::move(jac), std::move(lap));
}

FwdLap Op::softmax(const FwdLap& x_in) {
  // a_j = exp(s_j − L), L = logsumexp(s): ∇a_j = a_j(∇s_j − ∇L), ∇L = Σ_k a_k ∇s_k,
  // ∇²a_j = a_j(∇²s_j − ∇²L + |∇s_j − ∇L|²), ∇²L = Σ_k a_k(∇²s_k + |∇s_k|²) − |∇L|².
  const FwdLap x = dense_or_global(x_in, "softmax");
  const int64_t c = x.coord_axis();
  const auto a = torch::softmax(x.value, -1);
  const auto grad_l = (x.jac * a.unsqueeze(c)).sum(-1, true);  // ∇L, feature axis kept
  const auto centred = x.jac - grad_l;                          // ∇s_j − ∇L
  const auto lap_l = (a * (x.lap + x.coord_sq())).sum(-1, true) - grad_l.square().sum(c);
  auto lap = a * (x.lap - lap_l + centred.square().sum(c));
  auto jac = centred * a.unsqueeze(c);
  return like(x, a, std::move(jac), std::move(lap));
}

FwdLap Op::electron_mix(const FwdLap& a_in, const FwdLap& v_in) {
  const FwdLap a = dense_or_global(a_in, "electron_mix");
  if (a.kind == Sparsity::dense && v_in.kind == Sparsity::local) {
    require(a.value.size(-1) == v_in.value.size(1), "electron_mix: the weights must run over the electrons of v");
    return electron_mix_local(a, v_in);
  }
  const FwdLap v = dense_or_global(v_in, "electron_mix");
  require(a.kind == Sparsity::dense && v.kind == Sparsity::dense, "electron_mix needs electron features");
  require(v.offset == 0 && v.value.size(1) * 3 == v.n_coords && a.value.size(-1) == v.value.size(1),
          "electron_mix: the weights must run over all electrons of v");
  const int64_t b = a.value.size(0), e = a.value.size(1), e2 = v.value.size(1), n = a.n_coords, f = v.value.size(2);
  auto value = torch::matmul(a.value, v.value);                                    // [B, E, F]
  auto jac = torch::matmul(a.jac, v.value.unsqueeze(1)) +                           // [B, E, 3N, F]
             torch::einsum("bij,bjcf->bicf", {a.value, v.jac});
  // Σ_c Σ_j ∂_c a_ij ∂_c v_jf as one batched product over (c, j)
  const auto vj = v.jac.permute({0, 2, 1, 3}).reshape({b, n * e2, f});
  const auto cross = torch::matmul(a.jac.reshape({b, e, n * e2}), vj);
  auto lap = torch::matmul(a.lap, v.value) + torch::matmul(a.value, v.lap) + 2 * cross;
  return like(a, std::move(value), std::move(jac), std::move(lap));
}

}  // namespace nnvmc
