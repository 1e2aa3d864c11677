/// CCSD residuals from cached bare integrals: every T1-dressed block is the bare block plus its
/// t1 terms (ĝ = (X⊗Y⊗X⊗Y) g with X = 1 − t1ᵀ on the first index of each pair and Y = 1 + t1ᵀ
/// on the second), so an iteration costs the residual's own contractions plus O(o²v³).
/// Index letters: i, j, k, l active occupied; a, b, c, d virtual; blocks in chemists' notation.
#include <torch/torch.h>

#include "ccsd/residual.hpp"
#include "ccsd/residual_parts.hpp"

namespace nnvmc::ccsd {

CachedIntegrals::CachedIntegrals(const MoIntegrals& mo, Contractor& c, KernelChoice kernels)
    : blocks(bare_blocks(mo, c)), ladder(std::make_unique<PackedLadder>(mo, blocks, c, kernels)) {}

namespace {
/// t [o, v] as the batch-broadcast left operand of "kid,kd..." contractions [o, o, v].
torch::Tensor per_k(const torch::Tensor& t) { return t.unsqueeze(0).expand({t.size(0), t.size(0), t.size(1)}); }
}  // namespace

Residual ccsd_residual(const CachedIntegrals& ci, Contractor& c, const torch::Tensor& t1, const torch::Tensor& t2) {
  const BareBlocks& b = ci.blocks;
  const std::int64_t o = t1.size(0), v = t1.size(1);
  const torch::Tensor& t = t1;
  const torch::Tensor tT = t1.t();
  // 2 t2 − t2(a ↔ b) in one pass, laid out like t2 (lerp's output follows its first operand)
  const torch::Tensor u = torch::lerp(t2, t2.permute({0, 3, 2, 1}), -1.0);

  // Dressed Fock F̂ = (1 − T) M (1 + T), T[a,i] = t_ia, M = f + 2J(D1) − K(D1) with the t1 density
  // D1 (occupied–virtual block t): J_pq = Σ_kc (pq|kc) t_kc, K_ps = Σ_kc (pc|ks) t_kc.
  const torch::Tensor f_oo = b.fock.narrow(0, 0, o).narrow(1, 0, o), f_ov = b.fock.narrow(0, 0, o).narrow(1, o, v);
  const torch::Tensor f_vo = b.fock.narrow(0, o, v).narrow(1, 0, o), f_vv = b.fock.narrow(0, o, v).narrow(1, o, v);
  const torch::Tensor J_ov = c("fock", "iakc,kc->ia", {b.ovov, t});
  const torch::Tensor M_oo = f_oo + 2 * c("fock", "ijkc,kc->ij", {b.ooov, t}) - c("fock", "kjic,kc->ij", {b.ooov, t});
  const torch::Tensor M_ov = f_ov + 2 * J_ov - c("fock", "ickb,kc->ib", {b.ovov, t});
  const torch::Tensor M_vo = f_vo + 2 * J_ov.t() - c("fock", "kjac,kc->aj", {b.oovv, t});
  // Σ_kc (ac|kb) t_kc = Σ_k [Σ_c (kb|ac) t_kc]: one GEMV per k over the contiguous ovvv[k]
  const torch::Tensor K_vv = torch::bmm(b.ovvv.view({o, v * v, v}), t.unsqueeze(2)).sum(0).view({v, v}).t();
  const torch::Tensor M_vv = f_vv + 2 * c("fock", "kcab,kc->ab", {b.ovvv, t}) - K_vv;
  const torch::Tensor Foo = M_oo + M_ov.matmul(tT);
  const torch::Tensor Fov = M_ov.contiguous();
  const torch::Tensor Fvo = M_vo + M_vv.matmul(tT) - tT.matmul(M_oo) - tT.matmul(M_ov).matmul(tT);
  const torch::Tensor Fvv = M_vv - tT.matmul(M_ov);

  // dressed blocks; Δ_kilc = Σ_d t_id (kd|lc) is also Σ_d (lc|kd) t_id, the t1 part of ĝ's ovoo
  const torch::Tensor d_ooov = c("dress", "kid,kdlc->kilc", {per_k(t), b.ovov});
  const torch::Tensor ooov = b.ooov + d_ooov;                                            // ĝ_kilc
  const torch::Tensor oooo = b.oooo + c("dress", "kild,jd->kilj", {b.ooov, t}) +        // ĝ_kilj
                             c("dress", "ic,kclj->kilj", {t, ooov.permute({2, 3, 0, 1})});
  torch::Tensor oovv = c("dress", "la,kilc->kiac", {t, ooov});                            // ĝ_kiac
  oovv.neg_().add_(b.oovv).add_(c("dress", "kid,kdac->kiac", {per_k(t), b.ovvv}));
  // Q_kcai = Σ_d (kc|ad) t_id enters both ĝ_aikc and the vovo part S below
  const torch::Tensor Q = c("dress", "kcad,id->kcai", {b.ovvv, t});
  torch::Tensor voov = c("dress", "la,likc->aikc", {t, ooov});                           // ĝ_aikc
  voov.neg_().add_(b.ovov.permute({1, 0, 2, 3})).add_(Q.permute({2, 3, 0, 1}));

  Residual r;
  // singles: A1 = Σ u_kcid ĝ_adkc with ĝ_adkc = (kc|ad) − Σ_l t_la (ld|kc)
  const torch::Tensor a1 = c("A1", "kcid,kcda->ia", {u, b.ovvv}) -
                           c("A1", "il,la->ia", {c("A1", "idkc,ldkc->il", {u, b.ovov}), t});  // u_kcid = u_idkc
  r.r1 = a1 - c("B1", "kalc,kilc->ia", {u, ooov}) + c("C1", "iakc,kc->ia", {u, Fov}) + Fvo.t();

  // A2 = ĝ_aibj + Σ_cd ĝ_acbd t_ij^cd. The part of ĝ_aibj with both i and j turned into virtuals
  // (Σ_cd t_ic t_jd ĝ_acbd) is the ladder of t1 t1: the ladder runs on τ = t2 + t1 t1, and the
  // rest is (ai|bj) + Σ_kl t_ka t_lb (ki|lj) + S + Sᵀ (Sᵀ: a,i ↔ b,j) with
  // S_aibj = Σ_c t_ic (jb|ac) − Σ_k t_ka ĝ_kijb − Σ_lc t_lb t_ic (lj|ac) + Σ_klc t_ka t_lb t_ic (lj|kc).
  // Everything is laid out [i, a, j, b] as r2: (ai|bj) is the bare ovov block itself, S + Sᵀ
  // joins the doubles' P(·), and the (ki|lj) term joins the ladder's t1·t1 term.
  const torch::Tensor tau = t2 + t.view({o, v, 1, 1}) * t.view({1, 1, o, v});
  const PackedLadder::Packed tau_p = ci.ladder->pack(tau);
  const torch::Tensor w_tau = ci.ladder->w(tau_p);  // Σ_cd τ_icjd (kc|ld), [k, i, l, j]
  const torch::Tensor y2 = c("dress", "ljac,ic->ljai", {b.oovv, t});
  const torch::Tensor y3 = c("dress", "ljkc,ic->ljki", {b.ooov, t});
  torch::Tensor S = c("vovo", "ka,kijb->iajb", {t, ooov});
  S.neg_().add_(Q.permute({3, 2, 0, 1})).sub_(c("vovo", "lb,ljai->iajb", {t, y2}));  // Q_jbai as [i, a, j, b]
  S.add_(c("vovo", "ka,lb,ljki->iajb", {t, t, y3}));
  // B2's W_kilj = ĝ_kilj + Σ_cd t_icjd (kc|ld) is built with t2: Σ_cd t_icjd (kc|ld) =
  // w_tau − Σ_c t_ic Σ_d (kc|ld) t_jd, and Σ_d (kc|ld) t_jd = Δ_ljkc. B2 = Σ_kl t_kalb W_kilj runs
  // in the ladder's pair basis on τ: Σ_kl τ_kalb W_kilj − Σ_kl t_ka t_lb W_kilj, the second part
  // joining the ladder's t1·t1 term (as does the bare (ki|lj) of A2 above).
  const torch::Tensor W = oooo + w_tau - c("B2a", "ic,kclj->kilj", {t, d_ooov.permute({2, 3, 0, 1})});
  DoublesInputs in{t2, u, b.ovov, b.L_ovov, oovv, voov, torch::Tensor(), Foo, Fvv, S};  // no W: B2 is here
  r.r2 = ci.ladder->apply(tau_p, t, w_tau + b.oooo - W, W).add_(b.ovov).add_(doubles_common(c, in));
  return r;
}

}  // namespace nnvmc::ccsd
