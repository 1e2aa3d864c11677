/// Particle–particle ladder in the (ab)± pair basis on bare packed integrals (packed_ladder.hpp).
#include "ccsd/packed_ladder.hpp"

#include <torch/torch.h>

#include "ccsd/pair_packing.hpp"
#include "parallel/tensor_comm.hpp"

#include <string>
#include <vector>

namespace nnvmc::ccsd {

PairPacking::PairPacking(std::int64_t n_, const torch::Device& device) : n(n_), n_plus(n_ * (n_ + 1) / 2), n_minus(n_ * (n_ - 1) / 2) {
  std::vector<std::int64_t> pl, pls, mi, mis, tp(std::size_t(n * n)), tm(std::size_t(n * n));
  std::vector<double> sg(std::size_t(n * n)), hd;
  for (std::int64_t p = 0; p < n; ++p)
    for (std::int64_t q = p; q < n; ++q) {
      tp[std::size_t(p * n + q)] = tp[std::size_t(q * n + p)] = std::int64_t(pl.size());
      pl.push_back(p * n + q), pls.push_back(q * n + p), hd.push_back(p == q ? 0.5 : 1.0);
      if (p == q) {
        tm[std::size_t(p * n + p)] = n_minus;
        continue;
      }
      tm[std::size_t(p * n + q)] = tm[std::size_t(q * n + p)] = std::int64_t(mi.size());
      sg[std::size_t(p * n + q)] = 1, sg[std::size_t(q * n + p)] = -1;
      mi.push_back(p * n + q), mis.push_back(q * n + p);
    }
  auto longs = [&](const std::vector<std::int64_t>& x) { return torch::tensor(x, torch::kLong).to(device); };
  plus = longs(pl), plus_swap = longs(pls), minus = longs(mi), minus_swap = longs(mis);
  to_plus = longs(tp), to_minus = longs(tm);
  sign = torch::tensor(sg, torch::kFloat64).to(device);
  half_diag = torch::tensor(hd, torch::kFloat64).to(device);
}

std::int64_t PackedLadder::bytes(std::int64_t o, std::int64_t v) {
  const std::int64_t np = v * (v + 1) / 2, nm = v * (v - 1) / 2, op = o * (o + 1) / 2, om = o * (o - 1) / 2;
  return 8 * (np * np + nm * nm + o * v * (np + nm) + op * np + om * nm);
}

namespace {
/// a·bᵀ through the contractor; zeros when a shared or free extent is empty.
torch::Tensor gemm_nt(Contractor& c, const std::string& term, const torch::Tensor& a, const torch::Tensor& b) {
  if (a.numel() == 0 || b.numel() == 0) return torch::zeros({a.size(0), b.size(0)}, a.options());
  return c(term, "pc,qc->pq", {a, b});
}
/// rows · gᵀ with the rows split across ranks (parallel::world()): each rank multiplies its
/// block of occupied pair rows and the blocks are gathered in rank order (amplitudes and
/// integrals stay replicated).
torch::Tensor rows_gemm_nt(Contractor& c, const std::string& term, const torch::Tensor& rows, const torch::Tensor& g) {
  return parallel::map_rows(parallel::world(), rows, [&](const torch::Tensor& mine) { return gemm_nt(c, term, mine, g); });
}
}  // namespace

PackedLadder::PackedLadder(const MoIntegrals& mo, const BareBlocks& b, Contractor& c, KernelChoice kernels)
    : c_(c), kernels_(kernels), po_(mo.space.n_act_occ(), b.ovov.device()), pv_(mo.space.n_vir(), b.ovov.device()) {
  const std::int64_t v = mo.space.n_vir(), o = mo.space.n_act_occ(), occ = mo.space.n_occ;
  gp_ = torch::empty({pv_.n_plus, pv_.n_plus}, b.ovov.options());
  gm_ = torch::empty({pv_.n_minus, pv_.n_minus}, b.ovov.options());
  const auto rows_on_device = [&](const std::vector<std::int64_t>& r) {
    return torch::tensor(r, torch::kLong).to(b.ovov.device());
  };
  const torch::Tensor lvv =
      mo.cholesky() ? mo.chol.narrow(1, occ, v).narrow(2, occ, v).contiguous() : torch::Tensor();
  // rows (a, b ≥ a) for a in [a0, a0 + na): (ac|bd) as [a, c, b, d] → [a, b, (c d)], packed.
  // Only b ≥ a0 is built (half the v⁴·n_x FLOPs of all b; the rows b < a are not needed).
  const std::int64_t block = std::max<std::int64_t>(1, std::min<std::int64_t>(v, (std::int64_t(64) << 20) / (8 * v * v * v + 1)));
  std::int64_t row_p = 0, row_m = 0;
  for (std::int64_t a0 = 0; a0 < v; a0 += block) {
    const std::int64_t na = std::min(block, v - a0), nb = v - a0;
    const torch::Tensor acbd =
        mo.cholesky()
            ? c("set-up", "xac,xbd->acbd", {lvv.narrow(1, a0, na).contiguous(), lvv.narrow(1, a0, nb).contiguous()})
            : mo.eri.narrow(0, occ + a0, na).narrow(1, occ, v).narrow(2, occ + a0, nb).narrow(3, occ, v);
    const torch::Tensor abcd = acbd.permute({0, 2, 1, 3}).reshape({na * nb, v * v});  // row a·nb + (b − a0)
    std::vector<std::int64_t> rows_p, rows_m;
    for (std::int64_t a = 0; a < na; ++a)
      for (std::int64_t bb = a0 + a; bb < v; ++bb) {
        rows_p.push_back(a * nb + (bb - a0));
        if (bb > a0 + a) rows_m.push_back(a * nb + (bb - a0));
      }
    gp_.narrow(0, row_p, std::int64_t(rows_p.size()))
        .copy_(pack_plus(abcd.index_select(0, rows_on_device(rows_p)), pv_, pv_.half_diag));
    if (!rows_m.empty())
      gm_.narrow(0, row_m, std::int64_t(rows_m.size()))
          .copy_(pack_minus(abcd.index_select(0, rows_on_device(rows_m)), pv_, 1.0));
    row_p += std::int64_t(rows_p.size()), row_m += std::int64_t(rows_m.size());
  }
  // P^±[(k b), cd] from (kc|bd) = ovvv[k, c, b, d]
  const torch::Tensor kbcd = b.ovvv.permute({0, 2, 1, 3}).reshape({o * v, v * v});
  pp_ = pack_plus(kbcd, pv_, pv_.half_diag);
  pm_ = pack_minus(kbcd, pv_, 1.0);
  // g^± [(k l), cd] from (kc|ld) = ovov[k, c, l, d]
  const torch::Tensor klcd = b.ovov.permute({0, 2, 1, 3}).reshape({o * o, v * v});
  gop_ = pack_plus(klcd.index_select(0, po_.plus), pv_, pv_.half_diag);
  gom_ = pack_minus(klcd.index_select(0, po_.minus), pv_, 1.0);
}

PackedLadder::Packed PackedLadder::pack(const torch::Tensor& x) const {
  const Contractor::Section section(c_, "ladder pack");
  return pack_pairs(x, po_, pv_, kernels_);
}

torch::Tensor PackedLadder::w(const Packed& x) const {
  const std::int64_t o = po_.n;
  // [(i j), (k l)] → [k, i, l, j]
  return unpack_pairs(rows_gemm_nt(c_, "B2a", x.plus, gop_), rows_gemm_nt(c_, "B2a", x.minus, gom_), po_, po_).view({o, o, o, o}).permute({2, 0, 3, 1}).contiguous();
}

torch::Tensor PackedLadder::apply(const Packed& x, const torch::Tensor& t1, const torch::Tensor& q,
                                  const torch::Tensor& W) const {
  const std::int64_t o = po_.n, v = pv_.n;
  const torch::Tensor &xp = x.plus, &xn = x.minus;
  torch::Tensor rp = rows_gemm_nt(c_, "ladder", xp, gp_);          // [i ≤ j, a ≤ b]
  torch::Tensor rn = rows_gemm_nt(c_, "ladder", xn, gm_);          // [i < j, a < b]
  const torch::Tensor zp = rows_gemm_nt(c_, "ladder Z", xp, pp_);  // [i ≤ j, (k b)]
  const torch::Tensor zn = rows_gemm_nt(c_, "ladder Z", xn, pm_);  // [i < j, (k b)]
  if (W.defined()) {
    // Σ_kl x_kalb W_kilj: W'[(i j), (k l)] = W_kilj packed over (k l) like the integrals
    const torch::Tensor wm = W.permute({1, 3, 0, 2}).reshape({o * o, o * o});
    const auto mul = [&](const torch::Tensor& rows, const torch::Tensor& xs) {
      return parallel::map_rows(parallel::world(), rows, [&](const torch::Tensor& mine) {
        return mine.size(0) == 0 ? torch::zeros({0, xs.size(1)}, xs.options()) : c_("B2", "pk,kq->pq", {mine, xs});
      });
    };
    rp.add_(mul(pack_plus(wm.index_select(0, po_.plus), po_, po_.half_diag), xp));
    if (xn.numel() > 0) rn.add_(mul(pack_minus(wm.index_select(0, po_.minus), po_, 1.0), xn));
  }
  // unpack: + symmetric, − antisymmetric in (ij) and (ab); the pad row/column is the zero diagonal
  torch::Tensor z = zp.index_select(0, po_.to_plus);
  z.add_(torch::constant_pad_nd(zn, {0, 0, 0, 1}).index_select(0, po_.to_minus) * po_.sign.unsqueeze(1));
  // t1 dressing: C[a,i,j,b] = Σ_k t_ka Z_ij^kb; Q[a,i,b,j] = Σ_kl t_ka t_lb q_kilj
  const torch::Tensor cz = c_("ladder t1", "ka,ijkb->aijb", {t1, z.view({o, o, o, v})});
  const torch::Tensor qt = c_("ladder t1", "ka,lb,kilj->aibj", {t1, t1, q});
  torch::Tensor out;
  {
    const Contractor::Section section(c_, "ladder unpack");
    out = unpack_pairs_iajb(rp, rn, po_, pv_, kernels_);  // [i, a, j, b]
  }
  out.sub_(cz.permute({1, 0, 2, 3})).sub_(cz.permute({2, 3, 1, 0})).add_(qt.permute({1, 0, 3, 2}));
  return out;
}

}  // namespace nnvmc::ccsd
