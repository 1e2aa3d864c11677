/// @file fwdlap_electrons.cpp
/// FwdLap ops that create or change the electron structure: positions, electron–centre and
/// electron–electron vectors, norms, sums/means over electrons, global broadcasts, envelopes.
#include "blocks/fwdlap.hpp"
#include "blocks/fwdlap_detail.hpp"

namespace nnvmc {

using namespace fwdlap_detail;
using Op = Blocks<FwdLap>;

FwdLap Op::positions(const torch::Tensor& r) {
  const int64_t b = r.size(0), n = r.size(1);
  FwdLap x;
  x.value = r;
  x.jac = torch::eye(3, r.options()).expand({b, n, 3, 3}).contiguous();  // ∂r_ia/∂r_ic = δ_ac
  x.lap = torch::zeros_like(r);
  x.kind = Sparsity::local;
  x.n_coords = 3 * n;
  return x;
}

FwdLap Op::constant_electrons(const FwdLap& r, const torch::Tensor& c) {
  require(r.kind == Sparsity::local && r.value.size(1) == c.size(0), "constant_electrons: one row per electron of r");
  std::vector<int64_t> s{r.value.size(0)};
  s.insert(s.end(), c.sizes().begin(), c.sizes().end());
  FwdLap x = r;
  x.value = c.unsqueeze(0).expand(s).contiguous();
  s.insert(s.begin() + 2, 3);
  x.jac = torch::zeros(s, c.options());
  x.lap = torch::zeros_like(x.value);
  return x;
}

FwdLap Op::sub_centres(const FwdLap& r, const torch::Tensor& centres) {
  require(r.electron_axes() == 1, "sub_centres needs electron positions");
  const auto m = centres.size(0);
  auto jac = r.jac.unsqueeze(-2).expand({-1, -1, -1, m, -1});  // [B, E, C, M, 3]
  return like(r, r.value.unsqueeze(2) - centres, jac, r.lap.unsqueeze(2).expand({-1, -1, m, -1}));
}

FwdLap Op::pair_vectors(const FwdLap& r) {
  require(r.kind == Sparsity::local && r.offset == 0 && 3 * r.value.size(1) == r.n_coords,
          "pair_vectors needs the positions of all electrons");
  const int64_t b = r.value.size(0), n = r.value.size(1);
  const auto opts = r.value.options();
  FwdLap x = r;
  x.kind = Sparsity::pair;
  x.value = r.value.unsqueeze(2) - r.value.unsqueeze(1);  // [B, N, N, 3]
  // ∂(r_i − r_j)/∂r_i = 1 for i ≠ j; the diagonal is the constant 0.
  const auto off_diag = (1 - torch::eye(n, opts)).view({n, n, 1, 1});
  x.jac = (torch::eye(3, opts) * off_diag).expand({b, n, n, 3, 3});
  x.lap = torch::zeros_like(x.value);
  return x;
}

FwdLap Op::norm(const FwdLap& x) {
  const int64_t c = x.coord_axis();
  const auto v = x.value.norm(2, -1, /*keepdim=*/true);
  auto out = like(x, v, (x.jac * x.value.unsqueeze(c)).sum(-1, true) / v.unsqueeze(c), {});
  // v² = Σ x_f² ⇒ |∇v|² + v ∇²v = Σ_f (|∇x_f|² + x_f ∇²x_f)
  out.lap = ((x.coord_sq() + x.value * x.lap).sum(-1, true) - out.coord_sq()) / v;
  return out;
}

FwdLap Op::pair_norm(const FwdLap& ee) {
  require(ee.kind == Sparsity::pair && ee.offset == 0 && ee.offset2 == 0, "pair_norm needs all pairs");
  const int64_t n = ee.value.size(1);
  const auto eye = torch::eye(n, ee.value.options()).unsqueeze(-1);  // [N, N, 1]
  auto shifted = like(ee, ee.value + eye, ee.jac, ee.lap);  // diagonal jac is 0
  auto d = norm(shifted);
  const auto mask = 1 - eye;
  return like(d, d.value * mask, d.jac * mask.unsqueeze(-1), d.lap * mask);
}

FwdLap Op::pair_to_electron(const FwdLap& x) {
  require(x.kind == Sparsity::pair && x.value.dim() == 4, "pair_to_electron needs pair features [B, E, E', F]");
  // p_ij depends on r_i − r_j: ∂p_ij/∂r_i = jac_ij, ∂p_ij/∂r_j = −jac_ij. The partner block is
  // written first, then the own block is added (on the diagonal i = j the two cancel: p_ii is
  // a constant).
  const int64_t b = x.value.size(0), e1 = x.value.size(1), e2 = x.value.size(2), f = x.value.size(3);
  const int64_t n = x.n_coords / 3;
  auto dense = torch::zeros({b, e1, n, 3, f, e2}, x.jac.options());
  torch::diagonal(dense.narrow(2, x.offset2, e2), 0, 2, -1).copy_(-x.jac.movedim(2, -1));  // [B, E, 3, F, E']
  dense = dense.view({b, e1, 3 * n, f, e2});
  own_view(dense, x.offset, e1).add_(x.jac.movedim(3, 1).movedim(2, -1).movedim(2, -2));  // [B, 3, F, E', E]
  FwdLap out = like(x, x.value.movedim(2, -1), dense, x.lap.movedim(2, -1));
  out.kind = Sparsity::dense;
  out.offset2 = 0;
  return out;
}

FwdLap Op::sum_electrons(const FwdLap& x, int64_t axis) {
  if (x.kind == Sparsity::pair && axis == 2) {
    // Σ_j h_ij: ∂/∂r_i = Σ_j jac_ij, ∂/∂r_j = −jac_ij.
    auto s = x.jac.sizes().vec();  // [B, E, E', 3, *F]
    const int64_t e1 = s[1], e2 = s[2];
    std::vector<int64_t> ds{s[0], e1, x.n_coords / 3, 3};
    ds.insert(ds.end(), s.begin() + 4, s.end());
    auto dense = torch::zeros(ds, x.jac.options());
    dense.narrow(2, x.offset2, e2).copy_(-x.jac);
    ds.erase(ds.begin() + 2);
    ds[2] = x.n_coords;
    dense = dense.view(ds);  // [B, E, 3N, *F]
    own_view(dense, x.offset, e1).add_(x.jac.sum(2).movedim(1, -1));
    FwdLap out = like(x, x.value.sum(2), dense, x.lap.sum(2));
    out.kind = Sparsity::dense;
    out.offset2 = 0;
    return out;
  }
  require(axis == 1 && x.electron_axes() == 1, "sum_electrons: unsupported layout/axis");
  torch::Tensor jac;
  if (x.kind == Sparsity::dense) {
    jac = x.jac.sum(1);
  } else {  // local: electron offset+i's block gets jac_i
    auto s = x.jac.sizes().vec();  // [B, E, 3, *F]
    s[1] = x.n_coords / 3;
    jac = torch::zeros(s, x.jac.options());
    jac.narrow(1, x.offset, x.value.size(1)).copy_(x.jac);
    s.erase(s.begin() + 2);
    s[1] = x.n_coords;
    jac = jac.view(s);
  }
  FwdLap out = like(x, x.value.sum(1), jac, x.lap.sum(1));
  out.kind = Sparsity::global;
  out.offset = 0;
  return out;
}

FwdLap Op::mean_electrons(const FwdLap& x, int64_t axis) {
  const double inv = 1.0 / static_cast<double>(x.value.size(axis));
  auto s = sum_electrons(x, axis);
  return like(s, s.value * inv, s.jac * inv, s.lap * inv);
}

FwdLap Op::add_global(const FwdLap& x, const FwdLap& g) {
  require(g.kind == Sparsity::global, "add_global needs a global value");
  const auto d = x.to_dense();
  return like(d, d.value + g.value.unsqueeze(1), d.jac + g.jac.unsqueeze(1), d.lap + g.lap.unsqueeze(1));
}

FwdLap Op::add_global(FwdLap&& x, const FwdLap& g) {
  if (x.kind != Sparsity::dense || !x.exclusive()) return add_global(static_cast<const FwdLap&>(x), g);
  require(g.kind == Sparsity::global, "add_global needs a global value");
  x.value.add_(g.value.unsqueeze(1));
  x.jac.add_(g.jac.unsqueeze(1));
  x.lap.add_(g.lap.unsqueeze(1));
  return std::move(x);
}

FwdLap Op::envelope(const FwdLap& d, const torch::Tensor& pi, const torch::Tensor& sigma) {
  require(d.electron_axes() == 1, "envelope needs distances [B, E, M]");
  // Laid out [B, E, M, O] (contiguous constants, see Blocks<Tensor>::envelope) and summed over M.
  const auto s = torch::abs(sigma).t().contiguous();                              // [M, O]
  const auto pe = pi.t().contiguous() * torch::exp(-d.value.unsqueeze(-1) * s);  // [B, E, M, O]
  // ∂_c e^{−s d} = −s e ∂_c d;  Σ_c ∂_c² e^{−s d} = e (s² |∇d|² − s ∇²d)
  const auto jac = torch::matmul(d.jac, -s * pe);  // [B, E, C, M] · [B, E, M, O] → [B, E, C, O]
  const auto lap = (pe * (s.square() * d.coord_sq().unsqueeze(-1) - s * d.lap.unsqueeze(-1))).sum(-2);
  return like(d, pe.sum(-2), jac, lap);
}

}  // namespace nnvmc
