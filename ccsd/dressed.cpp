#include "ccsd/dressed.hpp"

#include <algorithm>

#include <torch/torch.h>

#include "parallel/tensor_comm.hpp"

namespace nnvmc::ccsd {

DressedHamiltonian::DressedHamiltonian(const MoIntegrals& mo, Contractor& contract) : mo_(mo), c_(contract) {}

namespace {
/// Half-open index range [lo, hi) of the MO axis.
struct Span {
  std::int64_t lo = 0, hi = 0;
  std::int64_t size() const { return hi - lo; }
};

/// The range of one space letter (o active occupied, O all occupied, v virtual, other: all).
Span span_of(char space, const OrbitalSpace& s) {
  switch (space) {
    case 'o': return {s.n_frozen, s.n_occ};
    case 'O': return {0, s.n_occ};
    case 'v': return {s.n_occ, s.n_mo};
    default: return {0, s.n_mo};
  }
}
}  // namespace

void DressedHamiltonian::dress(const torch::Tensor& t1) {
  const auto& s = mo_.space;
  torch::Tensor T = torch::zeros({s.n_mo, s.n_mo}, mo_.h.options());
  T.narrow(0, s.n_occ, s.n_vir()).narrow(1, s.n_frozen, s.n_act_occ()).copy_(t1.t());
  const torch::Tensor eye = torch::eye(s.n_mo, mo_.h.options());
  const torch::Tensor X = eye - T;          // X[P, p]
  const torch::Tensor Yt = (eye + T).t().contiguous();  // Yt[Q, q] = Y[q, Q]
  h_ = c_("dress", "Pp,Qq,pq->PQ", {X, Yt, mo_.h});
  if (mo_.cholesky()) l_ = c_("dress", "Pp,xpq,Qq->xPQ", {X, mo_.chol, Yt});
  else {  // conventional: blocks are dressed when first asked for
    t1_ = t1.contiguous();
    x_ = X;
    yt_ = Yt;
  }
  // the ovov block is t1-independent: dressed = bare, kept across dressings
  for (auto it = blocks_.begin(); it != blocks_.end();) it = it->first == "ovov" ? std::next(it) : blocks_.erase(it);
}

torch::Tensor DressedHamiltonian::range(char space, int dim, const torch::Tensor& t) const {
  const Span r = span_of(space, mo_.space);
  return t.narrow(dim, r.lo, r.size());
}

torch::Tensor DressedHamiltonian::dressed_eri_block(const std::string& sp) const {
  // ĝ = (X⊗Y⊗X⊗Y) g with X = 1 − T on axes 0, 2 (virtual rows mix in active occupied
  // columns) and Yᵀ = 1 + Tᵀ on axes 1, 3 (active occupied rows mix in virtual columns). An axis
  // whose target range misses the mixed rows is untouched; otherwise the target rows are
  // g[target] + S ×_axis g[source columns], with S the t1 rows of the target (zero elsewhere).
  static const char* specs[] = {"Pk,kqrs->Pqrs", "Pk,pkrs->pPrs", "Pk,pqks->pqPs", "Pk,pqrk->pqrP"};
  const auto& s = mo_.space;
  const Span occ{s.n_frozen, s.n_occ}, vir{s.n_occ, s.n_mo};
  Span target[4], source[4];
  bool mixed[4];
  for (int a = 0; a < 4; ++a) {
    target[a] = span_of(sp[a], s);
    const Span cols = a % 2 == 0 ? occ : vir, rows = a % 2 == 0 ? vir : occ;
    mixed[a] = target[a].lo < rows.hi && rows.lo < target[a].hi;
    source[a] = mixed[a] ? Span{std::min(target[a].lo, cols.lo), std::max(target[a].hi, cols.hi)} : target[a];
  }
  torch::Tensor g = mo_.eri;
  for (int a = 0; a < 4; ++a) g = g.narrow(a, source[a].lo, source[a].size());
  // Mix the axes with the smallest targets first: each step shrinks its axis from source to
  // target, which makes the following steps cheaper (e.g. vovo: the two o axes first).
  int order[4] = {0, 1, 2, 3};
  std::stable_sort(order, order + 4, [&](int x, int y) { return target[x].size() < target[y].size(); });
  for (const int a : order) {
    if (!mixed[a]) continue;
    const Span cols = a % 2 == 0 ? occ : vir, rows = a % 2 == 0 ? vir : occ;
    // S [target, cols]: rows of X − 1 = −t1ᵀ (virtual × occupied) or of Yᵀ − 1 = t1 (occupied × virtual)
    const torch::Tensor m = a % 2 == 0 ? -t1_.t() : t1_;
    torch::Tensor S = torch::zeros({target[a].size(), cols.size()}, t1_.options());
    const std::int64_t lo = std::max(target[a].lo, rows.lo), hi = std::min(target[a].hi, rows.hi);
    S.narrow(0, lo - target[a].lo, hi - lo).copy_(m.narrow(0, lo - rows.lo, hi - lo));
    const auto src_cols = g.narrow(a, cols.lo - source[a].lo, cols.size()).contiguous();
    // the contraction's fresh output takes the bare rows in place: one target-sized tensor
    // per step besides the previous one, not two (the conventional vvvv block is ~n⁴)
    torch::Tensor next = c_("dress", specs[a], {S, src_cols});
    next.add_(g.narrow(a, target[a].lo - source[a].lo, target[a].size()));
    g = std::move(next);
  }
  return g.contiguous();
}

torch::Tensor DressedHamiltonian::fock() const {
  const int n_occ = mo_.space.n_occ;
  if (!mo_.cholesky()) {
    // Σ_k∈occ ĝ_pqkk = (X J(D) Yᵀ)_pq and Σ_k ĝ_pkkq = (X K(D) Yᵀ)_pq with the dressed density
    // D_rs = Σ_k X_kr Y_sk (1 on the occupied diagonal, t1 in the occupied–virtual block):
    // two n⁴ contractions with the bare ERIs instead of dressing [n, n, O, O] blocks.
    const auto& s = mo_.space;
    torch::Tensor d = torch::zeros({s.n_mo, s.n_mo}, mo_.h.options());
    d.narrow(0, 0, n_occ).narrow(1, 0, n_occ).fill_diagonal_(1.0);
    d.narrow(0, s.n_frozen, s.n_act_occ()).narrow(1, n_occ, s.n_vir()).copy_(t1_);
    const auto j = c_("fock", "pqrs,rs->pq", {mo_.eri, d});
    const auto k = c_("fock", "pqrs,rq->ps", {mo_.eri, d});
    return h_ + c_("fock", "Pp,Qq,pq->PQ", {x_, yt_, (2 * j - k).contiguous()});
  }
  const auto lkk = l_.narrow(1, 0, n_occ).narrow(2, 0, n_occ).diagonal(0, 1, 2).sum(-1);  // [x]
  const auto j = c_("fock", "xpq,x->pq", {l_, lkk.contiguous()});
  const auto k = c_("fock", "xpk,xkq->pq", {l_.narrow(2, 0, n_occ).contiguous(), l_.narrow(1, 0, n_occ).contiguous()});
  return h_ + 2 * j - k;
}

torch::Tensor DressedHamiltonian::block(const std::string& sp) const {
  auto it = blocks_.find(sp);
  if (it != blocks_.end()) return it->second;
  if (!mo_.cholesky()) return blocks_.emplace(sp, dressed_eri_block(sp)).first->second;
  const auto left = range(sp[1], 2, range(sp[0], 1, l_)).contiguous();
  const auto right = range(sp[3], 2, range(sp[2], 1, l_)).contiguous();
  return blocks_.emplace(sp, c_("block " + sp, "xpq,xrs->pqrs", {left, right})).first->second;
}

torch::Tensor DressedHamiltonian::ladder(const torch::Tensor& t2) const {
  // Across ranks (parallel::world()): each rank contracts its block of occupied rows i, and the
  // blocks are gathered in order (amplitudes stay replicated).
  return parallel::map_rows(parallel::world(), t2, [&](const torch::Tensor& mine) {
    if (!mo_.cholesky()) return c_("ladder", "acbd,icjd->iajb", {block("vvvv"), mine});
    const auto lvv = range('v', 2, range('v', 1, l_)).contiguous();
    return c_("ladder", "xac,xbd,icjd->iajb", {lvv, lvv, mine});
  });
}

}  // namespace nnvmc::ccsd

namespace nnvmc::ccsd {

torch::Tensor DressedHamiltonian::singles_a1(const torch::Tensor& u) const {
  if (!mo_.cholesky()) return c_("A1", "kcid,adkc->ia", {u, block("vvov")});
  const auto lov = range('v', 2, range('o', 1, l_)).contiguous();
  const auto lvv = range('v', 2, range('v', 1, l_)).contiguous();
  return c_("A1", "kcid,xkc,xad->ia", {u, lov, lvv});
}

}  // namespace nnvmc::ccsd
