/// @file gaussian_orbitals.cpp
/// Gaussian orbitals on plain tensors (autograd) and the fit of the nuclear cusp correction.
#include "blocks/gaussian_orbitals.hpp"

#include "blocks/per_sample.hpp"
#include "core/errors.hpp"

#include <limits>

namespace nnvmc {

GaussianBasisTable GaussianBasisTable::to(torch::TensorOptions options) const {
  const auto dev = options.device();
  auto idx = [&](const torch::Tensor& t) { return t.defined() ? t.to(dev) : t; };
  auto real = [&](const torch::Tensor& t) { return t.defined() ? t.to(options) : t; };
  GaussianBasisTable out = *this;
  out.prim_exp = real(prim_exp);
  out.prim_atom = idx(prim_atom);
  out.contraction = real(contraction);
  out.ao_order = idx(ao_order);
  out.s_shells = idx(s_shells);
  out.s_functions = idx(s_functions);
  for (auto& g : out.groups) {
    g.atoms = idx(g.atoms);
    g.shells = idx(g.shells);
    g.powers = idx(g.powers);
    g.to_pure = real(g.to_pure);
  }
  return out;
}

namespace {

/// AO values in group order from electron–nucleus vectors (differentiable, no |d|, so finite
/// derivatives everywhere). @param d [..., M, 3] @param r2 [..., M] @return [..., n_basis]
torch::Tensor grouped_aos(const GaussianBasisTable& b, const torch::Tensor& d, const torch::Tensor& r2) {
  const auto prims = torch::exp(-b.prim_exp * r2.index_select(-1, b.prim_atom));  // [..., P]
  const auto radial = torch::matmul(prims, b.contraction);                      // [..., S]
  std::vector<torch::Tensor> pw{torch::ones_like(d)};
  for (int k = 1; k <= b.max_l; ++k) pw.push_back(pw.back() * d);
  const auto powers = torch::stack(pw, -1);  // [..., M, 3, L+1]
  const int64_t lead = d.dim() - 2;          // axes before M
  std::vector<torch::Tensor> parts;
  for (const auto& g : b.groups) {
    const auto rg = radial.index_select(-1, g.shells);  // [..., S_g]
    if (g.l == 0) {
      parts.push_back(rg);
      continue;
    }
    const auto pg = powers.index_select(lead, g.atoms);  // [..., S_g, 3, L+1]
    auto ang = pg.select(-2, 0).index_select(-1, g.powers[0]) * pg.select(-2, 1).index_select(-1, g.powers[1]) *
               pg.select(-2, 2).index_select(-1, g.powers[2]);  // [..., S_g, n_cart]
    if (g.pure) ang = torch::matmul(ang, g.to_pure);
    parts.push_back((ang * rg.unsqueeze(-1)).flatten(-2));
  }
  return torch::cat(parts, -1);
}

/// Coefficients in group order. @param c [n_basis, O]
torch::Tensor grouped_coefficients(const GaussianBasisTable& b, const torch::Tensor& c) {
  if (c.size(0) != b.n_basis)
    throw InputError("gaussian orbitals: " + std::to_string(c.size(0)) + " coefficient rows for a basis of " +
                     std::to_string(b.n_basis) + " functions");
  return c.index_select(0, b.ao_order);
}

}  // namespace

torch::Tensor gaussian_orbital_values(const GaussianBasisTable& basis, const torch::Tensor& coefficients,
                                      const torch::Tensor& nuclei, const torch::Tensor& points) {
  const auto d = points.unsqueeze(-2) - nuclei;  // [..., M, 3]
  return torch::matmul(grouped_aos(basis, d, d.square().sum(-1)), grouped_coefficients(basis, coefficients));
}

OrbitalCusps fit_orbital_cusps(const GaussianBasisTable& basis, const torch::Tensor& coefficients,
                               const torch::Tensor& nuclei, const torch::Tensor& charges,
                               const torch::Tensor& shifts, double rc_scaling) {
  const int64_t m = nuclei.size(0);
  const auto opts = coefficients.options();
  OrbitalCusps out;
  // Radii r_c = q / Z, each scaled by min(1, min_n |R_m − R_n| / (r_c,m + r_c,n)).
  auto rc = (rc_scaling / charges).to(opts).detach();
  if (m > 1) {
    const auto dist = (nuclei.unsqueeze(1) - nuclei.unsqueeze(0)).norm(2, -1);
    const auto ratio = dist / (rc.unsqueeze(1) + rc.unsqueeze(0)) + torch::eye(m, opts);
    rc = rc * std::get<0>(ratio.min(1)).clamp_max(1.0);
  }
  out.radius = rc;
  // s part of each orbital on each nucleus, per primitive: D_mko = [atom(k) = m] Σ_s c_ks C_{s,o}.
  const auto d = torch::matmul(basis.contraction.index_select(1, basis.s_shells),
                               coefficients.index_select(0, basis.s_functions));  // [P, O]
  const auto on = (basis.prim_atom.unsqueeze(0) == torch::arange(m, basis.prim_atom.options()).unsqueeze(1))
                      .to(opts);                                                  // [M, P]
  const auto dm = on.unsqueeze(-1) * d;                                           // [M, P, O]
  out.s_coefficients = dm;
  const auto a = basis.prim_exp;                                                  // [P]
  const auto rc1 = rc.unsqueeze(1);                                               // [M, 1]
  const auto e = torch::exp(-a * rc1.square());                                   // [M, P]
  const auto w0 = torch::ones_like(e), w1 = -2 * a * rc1 * e, w2 = (4 * a.square() * rc1.square() - 2 * a) * e;
  auto s_at = [&](const torch::Tensor& w) { return (dm * w.unsqueeze(-1)).sum(1); };  // [M, O]
  const auto s0 = s_at(w0), s_rc = s_at(e), ds_rc = s_at(w1), d2s_rc = s_at(w2);
  const auto phi_nuc = gaussian_orbital_values(basis, coefficients, nuclei, nuclei);  // [M, O]
  const auto active = (s0.detach().abs() > 1e-6);
  out.active = active.to(opts);
  // Inactive entries get harmless numbers (multiplied by 0 at evaluation, no NaN in gradients).
  const auto shift = shifts.defined() ? shifts : torch::zeros_like(s0);
  const auto phi0 = torch::where(active, s0 * (1 + shift), torch::ones_like(s0));
  const auto phi = torch::where(active, s_rc, torch::full_like(s0, 0.5));
  const auto dphi = torch::where(active, ds_rc, torch::zeros_like(s0));
  const auto d2phi = torch::where(active, d2s_rc, torch::zeros_like(s0));
  const auto value0 = phi_nuc + s0 * shift;  // corrected orbital at its nucleus
  out.sign = torch::sign(phi0).detach();
  // C keeps φ0 − C and φ(r_c) − C of the sign of φ0, so both logarithms below exist.
  const auto same = (out.sign == torch::sign(phi).detach()) & (phi0.abs() < phi.abs()).detach();
  const auto c = torch::where(same, 2 * phi0 - phi, 2 * phi - phi0);
  out.offset = c;
  const auto z = charges.to(opts).unsqueeze(1);
  const auto g = phi - c;
  const auto x1 = torch::log(g.abs()), x2 = dphi / g, x3 = d2phi / g;  // p, p', p'' + p'² at r_c
  const auto a0 = torch::log((phi0 - c).abs());
  const auto a1 = torch::where(active, -z * value0 / (phi0 - c), torch::zeros_like(s0));  // Kato at ρ = 0
  // a2 ρ² + a3 ρ³ + a4 ρ⁴ meets u = p(r_c) − a0 − a1 r_c, v = p'(r_c) − a1, w = p''(r_c):
  // a 3×3 system in A_k = a_k r_c^k solved in closed form.
  const auto rr = rc1;
  const auto u = x1 - a0 - a1 * rr, v = (x2 - a1) * rr, w = (x3 - x2.square()) * rr.square();
  const auto big_a4 = (w - 4 * v + 6 * u) / 2;
  const auto big_a3 = -w + 5 * v - 8 * u;
  const auto big_a2 = u - big_a3 - big_a4;
  out.poly = torch::stack({a0, a1, big_a2 / rr.square(), big_a3 / rr.pow(3), big_a4 / rr.pow(4)}, -1);
  return out;
}

torch::Tensor initial_cusp_shifts(const GaussianBasisTable& basis, const torch::Tensor& coefficients,
                                  const torch::Tensor& nuclei, const torch::Tensor& charges, double rc_scaling) {
  torch::NoGradGuard no_grad;
  const auto opts = coefficients.options();
  const int64_t m = nuclei.size(0), o = coefficients.size(1);
  constexpr int kCandidates = 101, kPoints = 48;
  const auto z = charges.to(opts).view({m, 1, 1});
  // The orbital's part at its nucleus that is not its s part there (other centres, p, d, ...):
  // held constant inside the small sphere, where it varies little.
  const auto base = fit_orbital_cusps(basis, coefficients, nuclei, charges, torch::Tensor(), rc_scaling);
  const auto phi_nuc = gaussian_orbital_values(basis, coefficients, nuclei, nuclei);                   // [M, O]
  const auto s0 = (base.s_coefficients.sum(1));                                                       // [M, O]
  const auto rest = (phi_nuc - s0).unsqueeze(-1);                                                     // [M, O, 1]
  const auto rc = base.radius.view({m, 1, 1});
  const auto grid = torch::arange(1, kPoints + 1, opts).div(double(kPoints));                         // (0, 1]
  const auto rho = rc * grid.view({1, 1, kPoints});                                                   // [M, 1, J]
  auto best = torch::zeros({m, o}, opts);
  auto best_cost = torch::full({m, o}, std::numeric_limits<double>::infinity(), opts);
  for (int k = 0; k < kCandidates; ++k) {
    const double delta = -0.5 + 2.5 * k / (kCandidates - 1);
    const auto cu = fit_orbital_cusps(basis, coefficients, nuclei, charges, torch::full({m, o}, delta, opts), rc_scaling);
    const auto a = cu.poly.unsqueeze(2);  // [M, O, 1, 5]
    const auto c = [&](int i) { return a.select(-1, i); };
    const auto p = c(0) + rho * (c(1) + rho * (c(2) + rho * (c(3) + rho * c(4))));
    const auto dp = c(1) + rho * (2 * c(2) + rho * (3 * c(3) + rho * 4 * c(4)));
    const auto d2p = 2 * c(2) + rho * (6 * c(3) + rho * 12 * c(4));
    const auto g = cu.sign.unsqueeze(-1) * torch::exp(p);
    const auto phi = cu.offset.unsqueeze(-1) + g + rest;
    const auto local = -0.5 * g * (d2p + dp.square() + 2 * dp / rho) / phi - z / rho;  // [M, O, J]
    const auto cost = std::get<0>((local - local.select(-1, kPoints - 1).unsqueeze(-1)).abs().max(-1));
    const auto better = torch::isfinite(cost) & (cost < best_cost);
    best = torch::where(better, torch::full_like(best, delta), best);
    best_cost = torch::where(better, cost, best_cost);
  }
  return torch::where(base.active > 0, best, torch::zeros_like(best));
}

torch::Tensor gaussian_orbitals_tensor(const torch::Tensor& r, const GaussianOrbitalSpec& spec) {
  const auto& b = *spec.basis;
  // Trainable inputs (MO coefficients, cusp fits from trainable shifts) enter as per-sample
  // replicas while a per_sample::Recorder is active (one backward gives per-walker gradients).
  const auto per_walker = [&](const torch::Tensor& c, int64_t dims) { return per_sample::constant(c, r.size(0), dims); };
  const auto d = r.unsqueeze(2) - spec.nuclei;  // [B, E, M, 3]
  const auto r2 = d.square().sum(-1);           // [B, E, M]
  // [B, E, K] · ([K, O] or per walker [B, K, O]) → [B, E, O]
  auto phi = torch::matmul(grouped_aos(b, d, r2), per_walker(grouped_coefficients(b, spec.coefficients), 3));
  const auto& cu = spec.cusps;
  if (!cu.radius.defined()) return phi;
  // Inside r_c: φ += C + sign·exp(p(ρ)) − s(ρ). ρ is clamped to r_c so that nothing outside
  // overflows (and the clamp passes no gradient there); the mask zeroes the term outside.
  const auto rho = torch::sqrt(r2);
  const auto inside = (rho < cu.radius).detach().to(r.scalar_type()).unsqueeze(-1);  // [B, E, M, 1]
  const auto rc = torch::minimum(rho, cu.radius).unsqueeze(-1);                        // [B, E, M, 1]
  const auto poly = per_walker(cu.poly, 5);                                            // [(B, 1,) M, O, 5]
  const auto p = poly.select(-1, 0) +
                 rc * (poly.select(-1, 1) + rc * (poly.select(-1, 2) + rc * (poly.select(-1, 3) + rc * poly.select(-1, 4))));
  const auto gauss = torch::exp(-b.prim_exp * rc.square());  // [B, E, M, P]
  const auto s_coef = per_walker(cu.s_coefficients, 4);      // [M, P, O] or [B, M, P, O]
  const auto s = s_coef.dim() == 4 ? torch::einsum("bemp,bmpo->bemo", {gauss, s_coef})
                                   : torch::einsum("bemp,mpo->bemo", {gauss, s_coef});  // [B, E, M, O]
  const auto delta = (per_walker(cu.offset, 4) + cu.sign * torch::exp(p) - s) * cu.active * inside;
  return phi + delta.sum(2);
}

}  // namespace nnvmc
