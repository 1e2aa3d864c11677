/// Bare (t1-independent) MO integral blocks for the cached CCSD iteration.
#include "ccsd/bare_blocks.hpp"

#include <torch/torch.h>

namespace nnvmc::ccsd {

std::int64_t BareBlocks::bytes(std::int64_t o, std::int64_t v) {
  const std::int64_t n = o + v;
  return 8 * (2 * o * v * o * v + o * o * o * v + o * o * o * o + o * o * v * v + o * v * v * v + n * n);
}

BareBlocks bare_blocks(const MoIntegrals& mo, Contractor& c) {
  const auto& s = mo.space;
  const std::int64_t f = s.n_frozen, o = s.n_act_occ(), occ = s.n_occ, v = s.n_vir(), n = s.n_mo;
  BareBlocks b;
  torch::Tensor J, K;  // Σ_k∈occ (pq|kk), Σ_k∈occ (pk|kq) over all orbitals [n, n]
  if (!mo.cholesky()) {
    const torch::Tensor& g = mo.eri;  // [n, n, n, n]
    auto blk = [&](std::int64_t a0, std::int64_t a, std::int64_t b0, std::int64_t bb, std::int64_t c0, std::int64_t cc,
                   std::int64_t d0, std::int64_t d) {
      return g.narrow(0, a0, a).narrow(1, b0, bb).narrow(2, c0, cc).narrow(3, d0, d).contiguous();
    };
    b.ovov = blk(f, o, occ, v, f, o, occ, v);
    b.ooov = blk(f, o, f, o, f, o, occ, v);
    b.oooo = blk(f, o, f, o, f, o, f, o);
    b.oovv = blk(f, o, f, o, occ, v, occ, v);
    b.ovvv = blk(f, o, occ, v, occ, v, occ, v);
    J = g.narrow(2, 0, occ).narrow(3, 0, occ).diagonal(0, 2, 3).sum(-1);
    K = g.narrow(1, 0, occ).narrow(2, 0, occ).diagonal(0, 1, 2).sum(-1);
  } else {
    const torch::Tensor& L = mo.chol;  // [x, n, n]
    const torch::Tensor Loo = L.narrow(1, f, o).narrow(2, f, o).contiguous();
    const torch::Tensor Lov = L.narrow(1, f, o).narrow(2, occ, v).contiguous();
    const torch::Tensor Lvv = L.narrow(1, occ, v).narrow(2, occ, v).contiguous();
    b.ovov = c("set-up", "xkc,xld->kcld", {Lov, Lov});
    b.ooov = c("set-up", "xki,xlc->kilc", {Loo, Lov});
    b.oooo = c("set-up", "xki,xlj->kilj", {Loo, Loo});
    b.oovv = c("set-up", "xki,xac->kiac", {Loo, Lvv});
    b.ovvv = c("set-up", "xkc,xad->kcad", {Lov, Lvv});
    const torch::Tensor lkk = L.narrow(1, 0, occ).narrow(2, 0, occ).diagonal(0, 1, 2).sum(-1).contiguous();  // [x]
    J = c("set-up", "xpq,x->pq", {L, lkk});
    K = c("set-up", "xpk,xkq->pq", {L.narrow(2, 0, occ).contiguous(), L.narrow(1, 0, occ).contiguous()});
  }
  b.L_ovov = (2 * b.ovov - b.ovov.permute({0, 3, 2, 1})).contiguous();
  b.fock = (mo.h + 2 * J - K).narrow(0, f, n - f).narrow(1, f, n - f).contiguous();
  return b;
}

}  // namespace nnvmc::ccsd
