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
  // B2: hole–hole ladder with W_kilj = ĝ_kilj + Σ_cd t_ij^cd g_kcld
  torch::Tensor r2 = c("B2", "kalb,kilj->iajb", {t2, in.W});
  // C2 with X_kiac = ĝ_kiac − ½ Σ_dl t_li^ad g_kdlc; the two C2 contractions are one GEMM:
  // Σ_kc t_kbic X_kjac = Z_jaib for Z_iajb = Σ_kc t_kbjc X_kiac
  const torch::Tensor X = in.oovv - 0.5 * c("C2a", "laid,kdlc->kiac", {t2, in.g_ovov});
  const torch::Tensor Z = c("C2", "kbjc,kiac->iajb", {t2, X});
  torch::Tensor s = -0.5 * Z - Z.permute({2, 1, 0, 3});
  // D2 with Y_aikc = L̂_aikc + ½ Σ_dl u_il^ad L_ldkc, L̂_aikc = 2ĝ_aikc − ĝ_acki (ĝ_acki = ĝ_kiac)
  const torch::Tensor Lhat = 2 * in.voov - in.oovv.permute({2, 1, 0, 3});
  const torch::Tensor Y = Lhat + 0.5 * c("D2a", "iald,ldkc->aikc", {in.u, in.L_ovov});
  s += 0.5 * c("D2", "jbkc,aikc->iajb", {in.u, Y});
  // E2: dressed Fock blocks with doubles corrections; Σ_k t_iakb G_kj enters as Σ_k G_ki t_kajb
  // (its image under P, a plain GEMM)
  const torch::Tensor Gv = in.Fvv - c("E2a", "kbld,ldkc->bc", {in.u, in.g_ovov});
  const torch::Tensor Go = in.Foo + c("E2b", "lcjd,kdlc->kj", {in.u, in.g_ovov});
  s += c("E2c", "iajc,bc->iajb", {t2, Gv.contiguous()}) - c("E2d", "kajb,ki->iajb", {t2, Go.contiguous()});
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
  DoublesInputs in{t2, u, g_ovov, L_ovov, h.block("oovv"), h.block("voov"), torch::Tensor(), Foo, Fvv};
  in.W = h.block("oooo") + c("B2a", "icjd,kcld->kilj", {t2, g_ovov});
  // A2: integral + particle–particle ladder
  r.r2 = h.block("vovo").permute({1, 0, 3, 2}) + h.ladder(t2) + doubles_common(c, in);
  return r;
}

double ccsd_correlation_energy_L(const torch::Tensor& L_ovov, const torch::Tensor& t1, const torch::Tensor& t2) {
  const torch::Tensor t1t1 = t1.unsqueeze(2).unsqueeze(3) * t1.unsqueeze(0).unsqueeze(0);
  return ((t2 * L_ovov).sum() + (t1t1 * L_ovov).sum()).item<double>();
}

double ccsd_correlation_energy(const torch::Tensor& g_ovov, const torch::Tensor& t1, const torch::Tensor& t2) {
  return ccsd_correlation_energy_L(2 * g_ovov - swap_virtuals(g_ovov), t1, t2);
}

}  // namespace nnvmc::ccsd
