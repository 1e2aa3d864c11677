/// @file fwdlap_determinant.cpp
/// Log-determinants of orbital matrices and the signed log-sum over determinants, with
/// Jacobian and Laplacian. Uses one LU factorisation with partial pivoting per matrix and
/// triangular solves (no explicit inverse):
///   ∂_c log|det A| = tr(A⁻¹ ∂_c A),
///   Σ_c ∂_c² log|det A| = tr(A⁻¹ ∇²A) − Σ_c tr((A⁻¹ ∂_c A)²).
/// Float32 orbitals are factorised in float64, and log_det's log|det| stays float64 up to
/// signed_logsumexp, which returns the sign's dtype: a nearly singular determinant (condition
/// ~1e8) of small weight in a well-conditioned ψ has log-space terms of ~1e10 (tr(A⁻¹∇²A) and
/// |∇log|det||², cancelling in ∇²ψ_k/ψ_k), which float32 cannot resolve: a LiH Psiformer sample's
/// local energy was off by 0.26 Eh (a user audit), now as jvp's. The solves with ∂A ([B, E, C, K, E]) run in
/// float64 too: +3 % (LiH) to +17 % (CH4) on one CPU thread, about 3× the step's working memory.
#include "blocks/fwdlap.hpp"
#include "blocks/fwdlap_detail.hpp"

namespace nnvmc {

using namespace fwdlap_detail;
using Op = Blocks<FwdLap>;

namespace {
/// A⁻¹B from A's pivoted LU factors (A = P L U) by a row gather and two triangular solves, as
/// LAPACK's getrs does; torch::linalg_lu_solve validates its pivots on the host (one device
/// sync per call), the triangular solves check nothing.
/// @param lu [..., n, n] @param rows [..., n] row i of PᵀB is row rows[i] of B
/// @param rhs [..., n, m] @return [..., n, m]
torch::Tensor lu_solve_unchecked(const torch::Tensor& lu, const torch::Tensor& rows, const torch::Tensor& rhs) {
  auto index_shape = rhs.sizes().vec();
  const auto pb = rhs.gather(-2, rows.unsqueeze(-1).expand(index_shape));
  const auto y = torch::linalg_solve_triangular(lu, pb, /*upper=*/false, /*left=*/true, /*unitriangular=*/true);
  return torch::linalg_solve_triangular(lu, y, /*upper=*/true);
}
}  // namespace

SignedFwdLap Op::log_det(const FwdLap& x_in) {
  FwdLap x = x_in.to_dense();  // value [B, E, K, E], jac [B, E, C, K, E]
  const auto dtype = x.value.scalar_type();
  if (dtype == torch::kFloat32) {  // (see the file's comment)
    x.value = x.value.to(torch::kFloat64);
    x.jac = x.jac.to(torch::kFloat64);
    x.lap = x.lap.to(torch::kFloat64);
  }
  require(x.value.dim() == 4 && x.value.size(1) == x.value.size(3), "log_det needs [B, E, K, E]");
  const int64_t b = x.value.size(0), e = x.value.size(1), k = x.value.size(2), c = x.n_coords;
  // Equilibrate: rows (electrons), then columns (orbitals) scaled to unit max-norm. A⁻¹∂A and
  // A⁻¹∇²A only change by a similarity (their traces not at all), log|det| by the scales'
  // logs; the LU of the balanced matrix usually loses less in float32 (CH4 max relative
  // Laplacian error over 256 walkers 2.3e-3 → 6.3e-4; one C4H4 walker 2.3 Ha → 0.13 Ha; on 64
  // other C4H4 walkers about the same), at no measurable cost.
  const auto rs = x.value.abs().amax(-1, true).clamp_min(1e-30);        // [B, E, K, 1]
  const auto cs = (x.value / rs).abs().amax(1, true).clamp_min(1e-30);  // [B, 1, K, E]
  const auto scale = rs * cs;                                            // [B, E, K, E]
  x.value = x.value / scale;
  x.jac = x.jac / scale.unsqueeze(2);
  x.lap = x.lap / scale;
  const auto log_scale = rs.log().sum({1, 3}) + cs.log().sum({1, 3});  // [B, K]
  const auto a = x.value.permute({0, 2, 1, 3});  // [B, K, E, E], row = electron
  // No exception on an exactly singular matrix: log|det| = −inf, sign 0 (a walker on a node);
  // its Jacobian and Laplacian are then non-finite and the walker is excluded downstream.
  const auto [lu, pivots, info] = torch::linalg_lu_factor_ex(a);
  // Row permutation of the factorisation: P[j, i] = 1 where row i of PᵀA is row j of A.
  const auto rows = std::get<0>(torch::lu_unpack(lu, pivots, /*unpack_data=*/false)).argmax(-2);  // [B, K, E]
  // One determinant at a time (bounds the [B, E, C, E] temporaries); all ∂_c A of it at once
  // as right-hand sides [B, E(row), C·E(col)].
  std::vector<torch::Tensor> grads, tr_mms;
  for (int64_t j = 0; j < k; ++j) {
    const auto da = x.jac.select(3, j).reshape({b, e, c * e});
    const auto m = lu_solve_unchecked(lu.select(1, j), rows.select(1, j), da)
                       .view({b, e, c, e});                        // A⁻¹∂_cA as [p, c, q]
    grads.push_back(torch::diagonal(m, 0, 1, 3).sum(-1));           // [B, C]
    const auto mc = m.permute({0, 2, 1, 3});                        // [B, C, p, q]
    tr_mms.push_back((mc * mc.transpose(-1, -2)).sum({-1, -2, -3}));  // [B]
  }
  const auto grad = torch::stack(grads, 1);    // [B, K, C]
  const auto tr_mm = torch::stack(tr_mms, 1);  // [B, K]
  const auto s = lu_solve_unchecked(lu, rows, x.lap.permute({0, 2, 1, 3}));
  const auto tr_l = torch::diagonal(s, 0, -2, -1).sum(-1);  // [B, K]
  const auto [sign, logabs] = slogdet_from_lu(lu, pivots);
  FwdLap out;
  out.kind = Sparsity::global;
  out.n_coords = c;
  out.value = logabs + log_scale;
  out.jac = grad.transpose(1, 2);  // [B, C, K]
  out.lap = tr_l - tr_mm;
  return {sign.to(dtype), out};  // (log|det| stays float64 for signed_logsumexp)
}

SignedFwdLap Op::signed_logsumexp(const torch::Tensor& sign, const FwdLap& l) {
  require(l.kind == Sparsity::global, "signed_logsumexp needs global values [B, K]");
  auto shift = std::get<0>(l.value.max(-1, /*keepdim=*/true));
  shift = torch::where(torch::isfinite(shift), shift, torch::zeros_like(shift));  // all terms zero
  const auto t = sign.to(l.value.scalar_type()) * torch::exp(l.value - shift);  // ψ_k / e^shift
  const auto sum = t.sum(-1, true);
  const auto w = t / sum;                             // ψ_k / ψ, [B, K]
  const auto grad = (l.jac * w.unsqueeze(1)).sum(-1);  // ∇log|ψ| = Σ_k w_k ∇log|ψ_k|, [B, C]
  // ∇²ψ/ψ = Σ_k w_k (∇²log|ψ_k| + |∇log|ψ_k||²);  ∇²log|ψ| = ∇²ψ/ψ − |∇log|ψ||²
  const auto lap_psi = (w * (l.lap + l.jac.square().sum(1))).sum(-1);
  FwdLap out = l;
  out.value = torch::log(torch::abs(sum.squeeze(-1))) + shift.squeeze(-1);
  out.jac = grad;
  out.lap = lap_psi - grad.square().sum(1);
  const auto dtype = sign.scalar_type();  // a float32 run's, from log_det's float64 (the file's comment)
  if (out.value.scalar_type() != dtype) {
    out.value = out.value.to(dtype);
    out.jac = out.jac.to(dtype);
    out.lap = out.lap.to(dtype);
  }
  return {torch::sign(sum.squeeze(-1)).to(dtype), out};
}

}  // namespace nnvmc
