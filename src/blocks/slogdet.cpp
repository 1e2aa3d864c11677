/// @file slogdet.cpp
/// Log-determinants through the pivoted LU and the signed log-sum-exp over determinants.
/// An exactly singular matrix (e.g. two same-spin electrons at one point) is no error: its
/// log|det| is −inf and its sign 0, like any walker on a node of ψ.
#include "blocks/blocks.hpp"

namespace nnvmc {

LogPsi lu_slogdet(const torch::Tensor& a) {
  // The _ex variant neither throws on a singular matrix nor synchronises a CUDA device to check.
  const auto [lu, pivots, info] = torch::linalg_lu_factor_ex(a);
  return slogdet_from_lu(lu, pivots);
}

LogPsi slogdet_from_lu(const torch::Tensor& lu, const torch::Tensor& pivots) {
  const auto diag = lu.diagonal(0, -2, -1);  // [..., n]
  // Each pivot p_i ≠ i (1-based) is one row swap.
  const auto swaps = (pivots != torch::arange(1, lu.size(-1) + 1, pivots.options())).sum(-1);
  const auto parity = (1 - 2 * (swaps % 2)).to(lu.scalar_type());
  return {(torch::sign(diag.detach()).prod(-1) * parity), diag.abs().log().sum(-1)};
}

LogPsi signed_logsumexp(const torch::Tensor& sign, const torch::Tensor& logabs) {
  // All terms zero (every determinant singular): shift by 0, so the sum is 0 and log|ψ| = −inf.
  auto shift = std::get<0>(logabs.max(-1, /*keepdim=*/true)).detach();
  shift = torch::where(torch::isfinite(shift), shift, torch::zeros_like(shift));
  const auto sum = (sign * torch::exp(logabs - shift)).sum(-1);
  return {torch::sign(sum).detach(), torch::log(torch::abs(sum)) + shift.squeeze(-1)};
}

}  // namespace nnvmc
