/// @file slogdet.cpp
/// Log-determinants through the pivoted LU and the signed log-sum-exp over determinants.
#include "blocks/blocks.hpp"

namespace nnvmc {

LogPsi lu_slogdet(const torch::Tensor& a) {
  // No host check (no device sync): a singular matrix gives log|det| = −inf.
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
  const auto shift = std::get<0>(logabs.max(-1, /*keepdim=*/true)).detach();
  const auto sum = (sign * torch::exp(logabs - shift)).sum(-1);
  return {torch::sign(sum).detach(), torch::log(torch::abs(sum)) + shift.squeeze(-1)};
}

}  // namespace nnvmc
