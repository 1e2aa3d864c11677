/// @file fwdlap_conv.cpp
/// The continuous-filter convolution of SchNet-like ansätze, out_i = Σ_j w_ij ⊙ h_j, with pair
/// filters w (functions of r_i − r_j) and electron features h. With ∂_i, ∂_j the derivatives
/// in electron i's and j's coordinates and a pair value w_ij (∂_j w_ij = −∂_i w_ij):
///   ∂ out_i = Σ_j (∂w_ij) h_j + w_ij ∂h_j,
///   ∇² out_i = Σ_j ∇²w_ij h_j + w_ij ∇²h_j + 2 ∂_i w_ij · (∂_i h_j − ∂_j h_j).
#include "blocks/fwdlap.hpp"
#include "blocks/fwdlap_detail.hpp"

namespace nnvmc {

using namespace fwdlap_detail;
using Op = Blocks<FwdLap>;

FwdLap Op::pair_conv(const FwdLap& w_in, const FwdLap& h, const torch::Tensor& mask) {
  require(w_in.kind == Sparsity::pair && w_in.value.dim() == 4, "pair_conv needs pair filters [B, E, E', F]");
  require(h.kind == Sparsity::local || h.kind == Sparsity::dense, "pair_conv needs electron features h");
  require(h.offset == w_in.offset2 && h.value.size(1) == w_in.value.size(2) && h.value.dim() == 3,
          "pair_conv: h must hold the electrons of the filters' second axis");
  FwdLap w = w_in;
  if (mask.defined()) {
    const auto m = mask.to(w.value.options()).unsqueeze(-1);  // [E, E', 1]
    w = like(w, w.value * m, w.jac * m.unsqueeze(-1), w.lap * m);
  }
  const int64_t b = w.value.size(0), e = w.value.size(1), e2 = w.value.size(2), f = w.value.size(3);
  const int64_t n = w.n_coords / 3;
  // Sums over j as broadcast products: faster than einsum's batched tiny matrix products here.
  const auto hv = h.value.unsqueeze(1);  // [B, 1, E', F]
  auto value = (w.value * hv).sum(2);
  // Jacobian as [B, E, N, 3, F]: electron i's own block and the blocks of the electrons j.
  auto jac = torch::zeros({b, e, n, 3, f}, w.value.options());
  const auto prod = w.jac * hv.unsqueeze(3);  // ∂_i w_ij h_j, [B, E, E', 3, F]
  const auto own = prod.sum(2);               // [B, E, 3, F]
  jac.narrow(2, w.offset2, e2).sub_(prod);    // −∂_i w_ij h_j in electron j's block
  if (h.kind == Sparsity::local) jac.narrow(2, w.offset2, e2).add_(w.value.unsqueeze(3) * h.jac.unsqueeze(1));
  jac.narrow(2, w.offset, e).diagonal(0, 1, 2).add_(own.permute({0, 2, 3, 1}));
  auto dense = jac.view({b, e, 3 * n, f});
  // Σ_c ∂_i w_ij · (∂_i h_j − ∂_j h_j): for local h, ∂_i h_j = 0 except on i = j, where a pair
  // value is constant (∂w_ii = 0).
  torch::Tensor cross;
  if (h.kind == Sparsity::local) {
    cross = -(w.jac * h.jac.unsqueeze(1)).sum({2, 3});
  } else {
    dense = dense + torch::einsum("bijf,bjcf->bicf", {w.value, h.jac});
    auto hj = h.jac;
    const auto blocks = hj.view({b, e2, n, 3, f}).narrow(2, w.offset, e).permute({0, 2, 1, 3, 4});  // ∂_i h_j
    cross = (w.jac * (blocks - h.own_jac().unsqueeze(1))).sum({2, 3});
  }
  auto lap = (w.lap * hv).sum(2) + (w.value * h.lap.unsqueeze(1)).sum(2) + 2 * cross;
  FwdLap out = like(w, std::move(value), std::move(dense), std::move(lap));
  out.kind = Sparsity::dense;
  out.offset2 = 0;
  return out;
}

}  // namespace nnvmc
