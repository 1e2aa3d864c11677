/// @file eri_units.cpp
/// General-contraction units and their ERI quartets (one libint2 call per primitive quartet,
/// contracted index by index).
#include "scf/eri_units.hpp"

#include <libint2.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include "core/errors.hpp"
#include "scf/integrals.hpp"
#include "scf/parallel.hpp"

namespace nnvmc::scf {

EriUnit lone_shell_unit(const libint2::Shell& shell, std::size_t first_function) {
  EriUnit u;
  u.first_function = first_function;
  u.shell_size = shell.size();
  u.parts = {shell};
  u.coeff = Eigen::MatrixXd::Ones(1, 1);
  return u;
}

namespace {

EriUnit make_unit(const BasisSet& basis, std::size_t first, std::size_t count, bool general) {
  const auto& shells = basis.shells();
  EriUnit u = lone_shell_unit(shells[first], basis.shell_offsets()[first]);
  u.first_shell = first;
  if (!general) return u;
  u.n_shells = count;
  u.from_primitives = true;
  u.parts.clear();
  const auto& c0 = shells[first].contr[0];
  std::vector<double> exponents;
  for (std::size_t s = first; s < first + count; ++s)
    for (const double a : shells[s].alpha)
      if (std::find(exponents.begin(), exponents.end(), a) == exponents.end()) exponents.push_back(a);
  u.coeff = Eigen::MatrixXd::Zero(Eigen::Index(exponents.size()), Eigen::Index(count));
  for (std::size_t i = 0; i < exponents.size(); ++i) {
    // a normalised primitive: its one coefficient is its normalisation N_i, and the shells'
    // coefficients multiply normalisation-free primitives (libint2::Shell::renorm)
    u.parts.emplace_back(libint2::svector<double>{exponents[i]},
                         libint2::svector<libint2::Shell::Contraction>{{c0.l, c0.pure, {1.0}}}, shells[first].O);
    const double norm = u.parts.back().contr[0].coeff[0];
    for (std::size_t s = 0; s < count; ++s) {
      const auto& sh = shells[first + s];
      for (std::size_t p = 0; p < sh.alpha.size(); ++p)
        if (sh.alpha[p] == exponents[i]) u.coeff(Eigen::Index(i), Eigen::Index(s)) += sh.contr[0].coeff[p] / norm;
    }
  }
  return u;
}

bool same_kind(const libint2::Shell& a, const libint2::Shell& b) {
  return a.contr[0].l == b.contr[0].l && a.contr[0].pure == b.contr[0].pure && a.O == b.O;
}

bool shares_a_primitive(const libint2::Shell& a, const libint2::Shell& b) {
  for (const double x : a.alpha)
    if (std::find(b.alpha.begin(), b.alpha.end(), x) != b.alpha.end()) return true;
  return false;
}

}  // namespace

std::vector<EriUnit> eri_units(const BasisSet& basis) {
  const auto& shells = basis.shells();
  const auto& atoms = basis.shell_atoms();
  std::vector<EriUnit> units;
  for (std::size_t s = 0; s < shells.size();) {
    // the run of shells on this atom with this l, each sharing a primitive with one before it
    std::size_t end = s + 1;
    for (; end < shells.size() && atoms[end] == atoms[s] && same_kind(shells[end], shells[s]); ++end) {
      bool shares = false;
      for (std::size_t t = s; t < end && !shares; ++t) shares = shares_a_primitive(shells[t], shells[end]);
      if (!shares) break;
    }
    std::size_t rows = 0;
    std::vector<double> distinct;
    for (std::size_t t = s; t < end; ++t)
      for (const double a : shells[t].alpha) {
        ++rows;
        if (std::find(distinct.begin(), distinct.end(), a) == distinct.end()) distinct.push_back(a);
      }
    if (end - s > 1 && 2 * distinct.size() <= rows) {
      units.push_back(make_unit(basis, s, end - s, true));
    } else {
      for (std::size_t t = s; t < end; ++t) units.push_back(make_unit(basis, t, 1, false));
    }
    s = end;
  }
  return units;
}

EriUnit single_shell_unit(const BasisSet& basis, const std::vector<EriUnit>& units, std::size_t shell) {
  for (const EriUnit& u : units) {
    if (shell < u.first_shell || shell >= u.first_shell + u.n_shells) continue;
    if (!u.from_primitives) return u;
    const std::size_t s = shell - u.first_shell;
    EriUnit one;
    one.first_shell = shell;
    one.n_shells = 1;
    one.first_function = u.first_function + s * u.shell_size;
    one.shell_size = u.shell_size;
    // only its own primitives (the unit's uncontracted diffuse shell is one of them, not all)
    std::vector<double> c;
    for (Eigen::Index i = 0; i < u.coeff.rows(); ++i)
      if (const double w = u.coeff(i, Eigen::Index(s)); w != 0) {
        one.parts.push_back(u.parts[std::size_t(i)]);
        c.push_back(w);
      }
    one.coeff = Eigen::Map<const Eigen::MatrixXd>(c.data(), Eigen::Index(c.size()), 1);
    one.from_primitives = true;
    return one;
  }
  throw Error("single_shell_unit: shell " + std::to_string(shell) + " is in none of the " +
              std::to_string(units.size()) + " units (units of another basis?)");
}

struct EriUnitEngine::Impl {
  libint2::Engine engine;
  bool three_center = false;  // BraKet::xs_xx (else xx_xx)
  std::vector<double> t4, t3, t2, out;
};

EriUnitEngine::EriUnitEngine() : impl_(new Impl) {}

EriUnitEngine::EriUnitEngine(const BasisSet& basis, const std::vector<EriUnit>& units, double precision)
    : impl_(new Impl) {
  ensure_libint_initialized();
  std::size_t max_nprim = 1;
  for (const EriUnit& u : units)
    for (const auto& part : u.parts) max_nprim = std::max(max_nprim, part.nprim());
  impl_->engine = libint2::Engine(libint2::Operator::coulomb, max_nprim, basis.max_l(), 0, precision);
}

EriUnitEngine EriUnitEngine::three_center(std::size_t max_nprim, int max_l, double precision) {
  ensure_libint_initialized();
  EriUnitEngine e;
  // (constructed at most at the orbital l libint2 was built for, then raised: the fitting
  // functions' l may go past it where libint2's three-centre code does)
  e.impl_->engine = libint2::Engine(libint2::Operator::coulomb, std::max<std::size_t>(1, max_nprim),
                                    std::min(max_l, kOrbitalMaxL), 0, precision);
  e.impl_->engine.set(libint2::BraKet::xs_xx);
  e.impl_->engine.set_max_l(static_cast<std::size_t>(max_l));
  e.impl_->three_center = true;
  return e;
}

EriUnitEngine::~EriUnitEngine() = default;
EriUnitEngine::EriUnitEngine(EriUnitEngine&&) noexcept = default;

const double* EriUnitEngine::compute(const EriUnit& a, const EriUnit& b, const EriUnit& c, const EriUnit& d,
                                     const libint2::ShellPair* bra, const libint2::ShellPair* ket) {
  auto& e = impl_->engine;
  using libint2::BraKet;
  using libint2::Operator;
  const bool xs = impl_->three_center;
  const auto one = [&](const libint2::Shell& s1, const libint2::Shell& s2, const libint2::Shell& s3,
                       const libint2::Shell& s4, const libint2::ShellPair* p12, const libint2::ShellPair* p34) {
    return xs ? e.compute2<Operator::coulomb, BraKet::xs_xx, 0>(s1, s2, s3, s4, nullptr, p34)[0]
              : e.compute2<Operator::coulomb, BraKet::xx_xx, 0>(s1, s2, s3, s4, p12, p34)[0];
  };
  if (!a.from_primitives && !b.from_primitives && !c.from_primitives && !d.from_primitives)
    return one(a.parts[0], b.parts[0], c.parts[0], d.parts[0], bra, ket);
  const libint2::ShellPair* pb = a.from_primitives || b.from_primitives ? nullptr : bra;
  const libint2::ShellPair* pk = c.from_primitives || d.from_primitives ? nullptr : ket;
  // Contract one index per loop level, innermost (d) first:
  //   t4[μa μb μc (s μd)]  = Σ_k  C_d(k, s) (ia ib ic k)[μa μb μc μd]
  //   t3[μa μb (s μc) fd]  = Σ_k  C_c(k, s) t4
  //   t2[μa (s μb) fc fd]  = Σ_k  C_b(k, s) t3
  //   out[(s μa) fb fc fd] = Σ_k  C_a(k, s) t2
  const std::size_t ma = a.shell_size, mb = b.shell_size, mc = c.shell_size, md = d.shell_size;
  const std::size_t Fb = b.n_functions(), Fc = c.n_functions(), Fd = d.n_functions();
  auto& t4 = impl_->t4;
  auto& t3 = impl_->t3;
  auto& t2 = impl_->t2;
  auto& out = impl_->out;
  t4.resize(ma * mb * mc * Fd);
  t3.resize(ma * mb * Fc * Fd);
  t2.resize(ma * Fb * Fc * Fd);
  out.assign(a.n_functions() * Fb * Fc * Fd, 0.0);
  bool any = false;
  // adds w · src[x, μ, y] (src [X, m, Y]) into dst[x, (s μ), y] (dst [X, S·m, Y])
  const auto scatter = [](const double* src, double w, std::size_t X, std::size_t m, std::size_t Y, std::size_t S,
                          std::size_t s, double* dst) {
    for (std::size_t x = 0; x < X; ++x)
      for (std::size_t mu = 0; mu < m; ++mu) {
        const double* from = src + (x * m + mu) * Y;
        double* to = dst + (x * S * m + s * m + mu) * Y;
        for (std::size_t y = 0; y < Y; ++y) to[y] += w * from[y];
      }
  };
  for (std::size_t ia = 0; ia < a.parts.size(); ++ia) {
    std::fill(t2.begin(), t2.end(), 0.0);
    bool any_a = false;
    for (std::size_t ib = 0; ib < b.parts.size(); ++ib) {
      std::fill(t3.begin(), t3.end(), 0.0);
      bool any_b = false;
      for (std::size_t ic = 0; ic < c.parts.size(); ++ic) {
        std::fill(t4.begin(), t4.end(), 0.0);
        bool any_c = false;
        for (std::size_t id = 0; id < d.parts.size(); ++id) {
          const double* v = one(a.parts[ia], b.parts[ib], c.parts[ic], d.parts[id], pb, pk);
          if (!v) continue;
          any_c = true;
          for (std::size_t s = 0; s < d.n_shells; ++s)
            if (const double w = d.coeff(Eigen::Index(id), Eigen::Index(s)); w != 0)
              scatter(v, w, ma * mb * mc, md, 1, d.n_shells, s, t4.data());
        }
        if (!any_c) continue;
        any_b = true;
        for (std::size_t s = 0; s < c.n_shells; ++s)
          if (const double w = c.coeff(Eigen::Index(ic), Eigen::Index(s)); w != 0)
            scatter(t4.data(), w, ma * mb, mc, Fd, c.n_shells, s, t3.data());
      }
      if (!any_b) continue;
      any_a = true;
      for (std::size_t s = 0; s < b.n_shells; ++s)
        if (const double w = b.coeff(Eigen::Index(ib), Eigen::Index(s)); w != 0)
          scatter(t3.data(), w, ma, mb, Fc * Fd, b.n_shells, s, t2.data());
    }
    if (!any_a) continue;
    any = true;
    for (std::size_t s = 0; s < a.n_shells; ++s)
      if (const double w = a.coeff(Eigen::Index(ia), Eigen::Index(s)); w != 0)
        scatter(t2.data(), w, 1, ma, Fb * Fc * Fd, a.n_shells, s, out.data());
  }
  return any ? out.data() : nullptr;
}

Eigen::MatrixXd unit_schwarz_bounds(const BasisSet& basis, const std::vector<EriUnit>& units, int threads,
                                    Eigen::MatrixXd* per_shell, bool same_atom_unbounded) {
  const std::size_t nu = units.size();
  Eigen::MatrixXd Q = Eigen::MatrixXd::Zero(Eigen::Index(nu), Eigen::Index(nu));
  if (per_shell) *per_shell = Eigen::MatrixXd::Zero(Eigen::Index(basis.n_shells()), Eigen::Index(basis.n_shells()));
  threads = resolve_threads(threads);
  std::vector<EriUnitEngine> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(basis, units, 0.0);  // no primitive screening: see schwarz_bounds
  // one task per unit pair (i ≥ j): a heavy atom's few units are few rows of very unequal cost
  parallel_for(nu * (nu + 1) / 2, threads, [&](std::size_t task, int t) {
    const auto [i, j] = packed_pair(task);
    {
      const EriUnit &a = units[i], &b = units[j];
      const bool unbounded = same_atom_unbounded && basis.shell_atoms()[a.first_shell] == basis.shell_atoms()[b.first_shell];
      const double* v = unbounded ? nullptr : pool[t].compute(a, b, a, b);
      const std::size_t na = a.n_functions(), nb = b.n_functions(), nab = na * nb;
      double unit_max = 0;
      for (std::size_t sa = 0; sa < a.n_shells; ++sa)
        for (std::size_t sb = 0; sb < b.n_shells; ++sb) {
          double m = 0;
          if (v)
            for (std::size_t mu = 0; mu < a.shell_size; ++mu)
              for (std::size_t nu_ = 0; nu_ < b.shell_size; ++nu_) {
                const std::size_t ab = (sa * a.shell_size + mu) * nb + sb * b.shell_size + nu_;
                m = std::max(m, std::abs(v[ab * nab + ab]));
              }
          if (unbounded) m = HUGE_VAL;
          unit_max = std::max(unit_max, m);
          if (per_shell) {
            const auto P = Eigen::Index(a.first_shell + sa), R = Eigen::Index(b.first_shell + sb);
            (*per_shell)(P, R) = (*per_shell)(R, P) = std::sqrt(m);
          }
        }
      Q(Eigen::Index(i), Eigen::Index(j)) = Q(Eigen::Index(j), Eigen::Index(i)) = std::sqrt(unit_max);
    }
  });
  return Q;
}

}  // namespace nnvmc::scf
