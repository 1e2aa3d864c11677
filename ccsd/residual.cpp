/// Ω1 = A1 + B1 + C1 + D1, Ω2 = A2 + B2 + P(C2 + D2 + E2) with P X_iajb = X_iajb + X_jbia.
#include "ccsd/residual.hpp"

#include <torch/torch.h>

namespace nnvmc::ccsd {

namespace {
/// x[i,a,j,b] → x[i,b,j,a]
torch::Tensor swap_virtuals(const torch::Tensor& x) { return x.permute({0, 3, 2, 1}); }
}  // namespace

Residual ccsd_residual(const DressedHamiltonian& h, Contractor& c, const torch::Tensor& t1,
                       const torch::Tensor& t2) {
  const auto& o_v = t1.sizes();
  const std::int64_t o = o_v[0];
  const torch::Tensor u = (2 * t2 - swap_virtuals(t2)).contiguous();
  const torch::Tensor F = h.fock();
  const std::int64_t n = F.size(0), v = o_v[1], occ_end = n - v, frz = occ_end - o;
  const torch::Tensor Foo = F.narrow(0, frz, o).narrow(1, frz, o);
  const torch::Tensor Fov = F.narrow(0, frz, o).narrow(1, occ_end, v).contiguous();
  const torch::Tensor Fvo = F.narrow(0, occ_end, v).narrow(1, frz, o);
  const torch::Tensor Fvv = F.narrow(0, occ_end, v).narrow(1, occ_end, v);
  const torch::Tensor g_ovov = h.block("ovov");                     // (kc|ld), undressed = dressed
  const torch::Tensor L_ovov = (2 * g_ovov - swap_virtuals(g_ovov)).contiguous();  // L_kcld

  Residual r;
  // singles
  r.r1 = h.singles_a1(u) - c("B1", "kalc,kilc->ia", {u, h.block("ooov")}) +
         c("C1", "iakc,kc->ia", {u, Fov}) + Fvo.t();

  // doubles: A2 (integral + particle–particle ladder)
  torch::Tensor r2 = h.block("vovo").permute({1, 0, 3, 2}) + h.ladder(t2);
  // B2: hole–hole ladder with W_kilj = ĝ_kilj + Σ_cd t_ij^cd g_kcld
  const torch::Tensor W = h.block("oooo") + c("B2a", "icjd,kcld->kilj", {t2, g_ovov});
  r2 += c("B2", "kalb,kilj->iajb", {t2, W});
  // C2 with X_kiac = ĝ_kiac − ½ Σ_dl t_li^ad g_kdlc
  const torch::Tensor X = h.block("oovv") - 0.5 * c("C2a", "laid,kdlc->kiac", {t2, g_ovov});
  torch::Tensor s = -0.5 * c("C2b", "kbjc,kiac->iajb", {t2, X}) - c("C2c", "kbic,kjac->iajb", {t2, X});
  // D2 with Y_aikc = L̂_aikc + ½ Σ_dl u_il^ad L_ldkc, L̂_aikc = 2ĝ_aikc − ĝ_acki
  const torch::Tensor Lhat = 2 * h.block("voov") - h.block("vvoo").permute({0, 3, 2, 1});
  const torch::Tensor Y = Lhat + 0.5 * c("D2a", "iald,ldkc->aikc", {u, L_ovov});
  s += 0.5 * c("D2", "jbkc,aikc->iajb", {u, Y});
  // E2: dressed Fock blocks with doubles corrections
  const torch::Tensor Gv = Fvv - c("E2a", "kbld,ldkc->bc", {u, g_ovov});
  const torch::Tensor Go = Foo + c("E2b", "lcjd,kdlc->kj", {u, g_ovov});
  s += c("E2c", "iajc,bc->iajb", {t2, Gv.contiguous()}) - c("E2d", "iakb,kj->iajb", {t2, Go.contiguous()});
  r.r2 = r2 + s + s.permute({2, 3, 0, 1});
  (void)o;
  return r;
}

double ccsd_correlation_energy(const torch::Tensor& g_ovov, const torch::Tensor& t1, const torch::Tensor& t2) {
  const torch::Tensor tau = t2 + torch::einsum("ia,jb->iajb", {t1, t1});
  const torch::Tensor L = 2 * g_ovov - swap_virtuals(g_ovov);
  return (tau * L).sum().item<double>();
}

}  // namespace nnvmc::ccsd
