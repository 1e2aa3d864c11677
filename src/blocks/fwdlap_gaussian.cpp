/// @file fwdlap_gaussian.cpp
/// Gaussian orbitals (with the nuclear cusp correction) on electron positions with value,
/// gradient and Laplacian in closed form. A basis function is χ = A(d)·R(|d|²) with A a
/// homogeneous polynomial of degree l (Cartesian monomial or solid harmonic) and
/// R(t) = Σ_k c_k e^{−α_k t}; with R' = dR/dt:
///   ∇χ  = R ∇A + 2 R' A d,
///   ∇²χ = R ∇²A + 4 l R' A + A (4 |d|² R'' + 6 R')          (d·∇A = l A).
/// The cusp term is radial, f(ρ) with ρ = |d|: ∇f = f'(ρ) d/ρ, ∇²f = f'' + 2 f'/ρ.
#include <atomic>

#include "blocks/fwdlap.hpp"
#include "blocks/fwdlap_detail.hpp"

namespace nnvmc {

using namespace fwdlap_detail;
using Op = Blocks<FwdLap>;

namespace {

/// Value, gradient and Laplacian of the AOs in group order.
struct AoDerivatives {
  torch::Tensor value;  ///< [B, E, n_basis]
  torch::Tensor grad;   ///< [B, E, 3, n_basis]
  torch::Tensor lap;    ///< [B, E, n_basis]
};

AoDerivatives ao_derivatives(const GaussianBasisTable& b, const torch::Tensor& d, const torch::Tensor& r2) {
  const auto a = b.prim_exp.unsqueeze(1);                                     // [P, 1]
  const auto prims = torch::exp(-b.prim_exp * r2.index_select(-1, b.prim_atom));  // [B, E, P]
  const auto r0 = torch::matmul(prims, b.contraction);                        // R   [B, E, S]
  const auto r1 = torch::matmul(prims, -a * b.contraction);                   // R'
  const auto r2d = torch::matmul(prims, a.square() * b.contraction);          // R''
  std::vector<torch::Tensor> pw{torch::ones_like(d)};
  for (int k = 1; k <= b.max_l; ++k) pw.push_back(pw.back() * d);
  const auto powers = torch::stack(pw, -1);  // [B, E, M, 3, L+1]
  std::vector<torch::Tensor> vals, grads, laps;
  for (const auto& g : b.groups) {
    const auto v0 = r0.index_select(-1, g.shells), v1 = r1.index_select(-1, g.shells),
               v2 = r2d.index_select(-1, g.shells);              // [B, E, S_g]
    const auto dg = d.index_select(2, g.atoms);                  // [B, E, S_g, 3]
    const auto lap_r = 4 * r2.index_select(2, g.atoms) * v2 + 6 * v1;  // ∇²R
    if (g.l == 0) {
      vals.push_back(v0);
      grads.push_back((2 * v1.unsqueeze(-1) * dg).transpose(-1, -2));  // [B, E, 3, S_g]
      laps.push_back(lap_r);
      continue;
    }
    const auto pg = powers.index_select(2, g.atoms);  // [B, E, S_g, 3, L+1]
    torch::Tensor f[3], df[3], d2f[3];
    for (int t = 0; t < 3; ++t) {
      const auto x = pg.select(3, t);  // [B, E, S_g, L+1]
      const auto p = g.powers[t];
      const auto pf = p.to(d.scalar_type());
      f[t] = x.index_select(-1, p);
      df[t] = x.index_select(-1, (p - 1).clamp_min(0)) * pf;
      d2f[t] = x.index_select(-1, (p - 2).clamp_min(0)) * (pf * (pf - 1));
    }
    auto ang = f[0] * f[1] * f[2];                                                             // [B, E, S_g, n_cart]
    auto dang = torch::stack({df[0] * f[1] * f[2], f[0] * df[1] * f[2], f[0] * f[1] * df[2]}, -2);  // [.., 3, n_cart]
    auto lang = d2f[0] * f[1] * f[2] + f[0] * d2f[1] * f[2] + f[0] * f[1] * d2f[2];
    if (g.pure) {
      ang = torch::matmul(ang, g.to_pure);
      dang = torch::matmul(dang, g.to_pure);
      lang = torch::matmul(lang, g.to_pure);
    }
    const auto w0 = v0.unsqueeze(-1), w1 = v1.unsqueeze(-1);
    vals.push_back((ang * w0).flatten(-2));
    const auto grad = dang * w0.unsqueeze(-1) + 2 * (w1 * ang).unsqueeze(-2) * dg.unsqueeze(-1);  // [B, E, S_g, 3, nf]
    grads.push_back(grad.transpose(2, 3).flatten(-2));
    laps.push_back((lang * w0 + (4 * g.l) * w1 * ang + ang * lap_r.unsqueeze(-1)).flatten(-2));
  }
  return {torch::cat(vals, -1), torch::cat(grads, -1), torch::cat(laps, -1)};
}

}  // namespace

FwdLap Op::gaussian_orbitals(const FwdLap& r, const GaussianOrbitalSpec& spec) {
  require(r.kind == Sparsity::local && r.value.dim() == 3 && r.value.size(2) == 3,
          "gaussian_orbitals needs electron positions [B, E, 3]");
  // That r is the positions themselves is a fact of the calling code, checked on the first call
  // only: the check reads device data on the host, which a captured CUDA graph cannot contain
  // (the first call is an eager warm-up).
  static std::atomic<bool> checked{false};
  if (!checked.load(std::memory_order_relaxed)) {
    require(torch::equal(r.jac, torch::eye(3, r.jac.options()).expand_as(r.jac)) && !r.lap.any().item<bool>(),
            "gaussian_orbitals needs the positions themselves (Blocks<FwdLap>::positions)");
    checked.store(true, std::memory_order_relaxed);
  }
  const auto& b = *spec.basis;
  const auto d = r.value.unsqueeze(2) - spec.nuclei;  // [B, E, M, 3]
  const auto r2 = d.square().sum(-1);                 // [B, E, M]
  const auto ao = ao_derivatives(b, d, r2);
  const auto c = spec.coefficients.index_select(0, b.ao_order);  // [n_basis, O] group order
  auto value = torch::matmul(ao.value, c), jac = torch::matmul(ao.grad, c), lap = torch::matmul(ao.lap, c);
  const auto& cu = spec.cusps;
  if (cu.radius.defined()) {
    const auto rho = torch::sqrt(r2);
    const auto inside = (rho < cu.radius).to(rho.scalar_type()).unsqueeze(-1);  // [B, E, M, 1]
    const auto x = torch::minimum(rho, cu.radius).unsqueeze(-1);                // [B, E, M, 1]
    const auto k = [&](int i) { return cu.poly.select(-1, i); };                 // [M, O]
    const auto p = k(0) + x * (k(1) + x * (k(2) + x * (k(3) + x * k(4))));
    const auto dp = k(1) + x * (2 * k(2) + x * (3 * k(3) + x * 4 * k(4)));
    const auto d2p = 2 * k(2) + x * (6 * k(3) + x * 12 * k(4));
    const auto al = b.prim_exp;                                         // [P]
    const auto gauss = torch::exp(-al * x.square());                    // [B, E, M, P]
    auto s_part = [&](const torch::Tensor& w) { return torch::einsum("bemp,mpo->bemo", {w, cu.s_coefficients}); };
    const auto s0 = s_part(gauss), s1 = s_part(-2 * al * x * gauss),
               s2 = s_part((4 * al.square() * x.square() - 2 * al) * gauss);
    const auto e = cu.sign * torch::exp(p);
    const auto w = cu.active * inside;  // [B, E, M, O]
    const auto f0 = (cu.offset + e - s0) * w;
    const auto f1 = (e * dp - s1) * w;
    const auto f2 = (e * (d2p + dp.square()) - s2) * w;
    const auto f1_over = f1 / x;  // f'(ρ)/ρ; x ≥ ρ > 0 wherever w ≠ 0
    value = value + f0.sum(2);
    jac = jac + torch::einsum("bemo,bemc->beco", {f1_over, d});
    lap = lap + (f2 + 2 * f1_over).sum(2);
  }
  return like(r, std::move(value), std::move(jac), std::move(lap));
}

}  // namespace nnvmc
