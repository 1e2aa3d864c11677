/// Ω1 = A1 + B1 + C1 + D1, Ω2 = A2 + B2 + P(C2 + D2 + E2) with P X_iajb = X_iajb + X_jbia.
#include "ccsd/residual.hpp"

#include <torch/torch.h>

#include "ccsd/residual_parts.hpp"

namespace nnvmc::ccsd {

namespace {
/// x[i,a,j,b] → x[i,b,j,a]
torch::Tensor swap_virtuals(const torch::Tensor& x) { return x.permute({0, 3, 2, 1}); }
}  // namespace

torch::Tensor doubles_common(Contractor& c, const DoublesInputs& in) {
  const torch::Tensor& t2 = in.t2;
  // B2: hole–hole ladder with W_kilj = ĝ_kilj + Σ_cd t_ij^cd g_kcld (when W is given)
  torch::Tensor r2 = in.W.defined() ? c("B2", "kalb,kilj->iajb", {t2, in.W}) : torch::Tensor();
  // The o²v² combinations below are fused passes over the contraction outputs (no scaled copies).
  // C2 with X_kiac = ĝ_kiac − ½ Σ_dl t_li^ad g_kdlc; the two C2 contractions are one GEMM:
  // Σ_kc t_kbic X_kiac = Z_jaib for Z_iajb = Σ_kc t_kbjc X_kiac. X carries the factor −½ of s.
  torch::Tensor X = c("C2a", "laid,kdlc->kiac", {t2, in.g_ovov});
  X.mul_(0.25).sub_(in.oovv, 0.5);  // −½ X
  const torch::Tensor Z = c("C2", "kbjc,kiac->iajb", {t2, X});  // −½ Z
  // D2 with Y_aikc = L̂_aikc + ½ Σ_dl u_il^ad L_ldkc, L̂_aikc = 2ĝ_aikc − ĝ_acki (ĝ_acki = ĝ_kiac);
  // Y carries the factor ½ of s
  torch::Tensor Y = c("D2a", "iald,ldkc->aikc", {in.u, in.L_ovov});
  Y.mul_(0.25).add_(in.voov).sub_(in.oovv.permute({2, 1, 0, 3}), 0.5);  // ½ Y
  // s = −½ Z − Zᵀ' + ½ D2 + E2 (+ extra), Zᵀ'_iajb = Z_jaib
  torch::Tensor s = c("D2", "jbkc,aikc->iajb", {in.u, Y});
  s.add_(Z).add_(Z.permute({2, 1, 0, 3}), 2.0);
  // E2: dressed Fock blocks with doubles corrections; Σ_k t_iakb G_kj enters as Σ_k G_ki t_kajb
  // (its image under P, a plain GEMM)
  // (written with u_kbld = u_ldkb and u_lcjd = u_jdlc, so the summed indices lead or trail
  // both operands and neither is copied into another layout)
  const torch::Tensor Gv = in.Fvv - c("E2a", "ldkb,ldkc->bc", {in.u, in.g_ovov});
  const torch::Tensor Go = in.Foo + c("E2b", "jdlc,kdlc->kj", {in.u, in.g_ovov});
  s.add_(c("E2c", "iajc,bc->iajb", {t2, Gv.contiguous()})).sub_(c("E2d", "kajb,ki->iajb", {t2, Go.contiguous()}));
  if (in.extra.defined()) s.add_(in.extra);
  if (!r2.defined()) return s.add(s.permute({2, 3, 0, 1}));
  return r2.add_(s).add_(s.permute({2, 3, 0, 1}));
}

Residual ccsd_residual(const DressedHamiltonian& h, Contractor& c, const torch::Tensor& t1,
                       const torch::Tensor& t2) {
  const std::int64_t o = t1.size(0), v = t1.size(1);
  const torch::Tensor u = (2 * t2 - swap_virtuals(t2)).contiguous();
  const torch::Tensor F = h.fock();
  const std::int64_t n = F.size(0), occ_end = n - v, frz = occ_end - o;
  const torch::Tensor Foo = F.narrow(0, frz, o).narrow(1, frz, o);
  const torch::Tensor Fov = F.narrow(0, frz, o).narrow(1, occ_end, v).contiguous();
  const torch::Tensor Fvo = F.narrow(0, occ_end, v).narrow(1, frz, o);
  const torch::Tensor Fvv = F.narrow(0, occ_end, v).narrow(1, occ_end, v);
  const torch::Tensor g_ovov = h.block("ovov");  // (kc|ld), undressed = dressed (cached by h)
  const torch::Tensor L_ovov = (2 * g_ovov - swap_virtuals(g_ovov)).contiguous();  // L_kcld

  Residual r;
  r.r1 = h.singles_a1(u) - c("B1", "kalc,kilc->ia", {u, h.block("ooov")}) +
         c("C1", "iakc,kc->ia", {u, Fov}) + Fvo.t();
  DoublesInputs in{t2, u, g_ovov, L_ovov, h.block("oovv"), h.block("voov"), torch::Tensor(), Foo, Fvv, torch::Tensor()};
  in.W = h.block("oooo") + c("B2a", "icjd,kcld->kilj", {t2, g_ovov});
  // A2: integral + particle–particle ladder
  r.r2 = h.block("vovo").permute({1, 0, 3, 2}) + h.ladder(t2) + doubles_common(c, in);
  return r;
}

double ccsd_correlation_energy_L(const torch::Tensor& L_ovov, const torch::Tensor& t1, const torch::Tensor& t2) {
  // Σ_iajb (t_iajb + t_ia t_jb) L_iajb as a dot product and t1ᵀ L t1 (L viewed [(ia), (jb)])
  const std::int64_t n = t1.numel();
  const torch::Tensor L = L_ovov.reshape({n, n}), x = t1.reshape({n});
  return (t2.reshape({n * n}).dot(L.reshape({n * n})) + x.dot(torch::mv(L, x))).item<double>();
}

double ccsd_correlation_energy(const torch::Tensor& g_ovov, const torch::Tensor& t1, const torch::Tensor& t2) {
  return ccsd_correlation_energy_L(2 * g_ovov - swap_virtuals(g_ovov), t1, t2);
}

}  // namespace nnvmc::ccsd
