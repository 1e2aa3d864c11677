#include "ccsd/dressed.hpp"

#include <torch/torch.h>

namespace nnvmc::ccsd {

DressedHamiltonian::DressedHamiltonian(const MoIntegrals& mo, Contractor& contract) : mo_(mo), c_(contract) {}

void DressedHamiltonian::dress(const torch::Tensor& t1) {
  const auto& s = mo_.space;
  torch::Tensor T = torch::zeros({s.n_mo, s.n_mo}, torch::kFloat64);
  T.narrow(0, s.n_occ, s.n_vir()).narrow(1, s.n_frozen, s.n_act_occ()).copy_(t1.t());
  const torch::Tensor eye = torch::eye(s.n_mo, torch::kFloat64);
  const torch::Tensor X = eye - T;          // X[P, p]
  const torch::Tensor Yt = (eye + T).t().contiguous();  // Yt[Q, q] = Y[q, Q]
  h_ = c_("dress", "Pp,Qq,pq->PQ", {X, Yt, mo_.h});
  if (mo_.cholesky()) l_ = c_("dress", "Pp,xpq,Qq->xPQ", {X, mo_.chol, Yt});
  else g_ = c_("dress", "Pp,Qq,Rr,Ss,pqrs->PQRS", {X, Yt, X, Yt, mo_.eri});
}

torch::Tensor DressedHamiltonian::range(char space, int dim, const torch::Tensor& t) const {
  const auto& s = mo_.space;
  switch (space) {
    case 'o': return t.narrow(dim, s.n_frozen, s.n_act_occ());
    case 'O': return t.narrow(dim, 0, s.n_occ);
    case 'v': return t.narrow(dim, s.n_occ, s.n_vir());
    default: return t;
  }
}

torch::Tensor DressedHamiltonian::fock() const {
  const int n_occ = mo_.space.n_occ;
  if (!mo_.cholesky()) {
    const auto j = g_.narrow(2, 0, n_occ).narrow(3, 0, n_occ).diagonal(0, 2, 3).sum(-1);
    const auto k = g_.narrow(1, 0, n_occ).narrow(2, 0, n_occ).diagonal(0, 1, 2).sum(-1);
    return h_ + 2 * j - k;
  }
  const auto lkk = l_.narrow(1, 0, n_occ).narrow(2, 0, n_occ).diagonal(0, 1, 2).sum(-1);  // [x]
  const auto j = c_("fock", "xpq,x->pq", {l_, lkk.contiguous()});
  const auto k = c_("fock", "xpk,xkq->pq", {l_.narrow(2, 0, n_occ).contiguous(), l_.narrow(1, 0, n_occ).contiguous()});
  return h_ + 2 * j - k;
}

torch::Tensor DressedHamiltonian::block(const std::string& sp) const {
  if (!mo_.cholesky()) {
    torch::Tensor t = g_;
    for (int d = 0; d < 4; ++d) t = range(sp[d], d, t);
    return t.contiguous();
  }
  const auto left = range(sp[1], 2, range(sp[0], 1, l_)).contiguous();
  const auto right = range(sp[3], 2, range(sp[2], 1, l_)).contiguous();
  return c_("block " + sp, "xpq,xrs->pqrs", {left, right});
}

torch::Tensor DressedHamiltonian::ladder(const torch::Tensor& t2) const {
  if (!mo_.cholesky()) return c_("ladder", "acbd,icjd->iajb", {block("vvvv"), t2});
  const auto lvv = range('v', 2, range('v', 1, l_)).contiguous();
  return c_("ladder", "xac,xbd,icjd->iajb", {lvv, lvv, t2});
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
