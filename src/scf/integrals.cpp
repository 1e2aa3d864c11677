/// @file integrals.cpp
/// One-electron integrals, Schwarz bounds and ERI extraction through libint2.
#include "scf/integrals.hpp"

#include <libint2.hpp>

#include <algorithm>
#include <cmath>
#include <mutex>

#include "core/errors.hpp"
#include "scf/eri_units.hpp"
#include "scf/parallel.hpp"

namespace nnvmc::scf {

void ensure_libint_initialized() {
  static std::once_flag once;
  std::call_once(once, [] { libint2::initialize(); });
}

namespace {

using libint2::Engine;
using libint2::Operator;

/// One engine per thread, copies of a prototype.
std::vector<Engine> engines(const Engine& prototype, int n) { return std::vector<Engine>(n, prototype); }

/// Fills a symmetric one-electron matrix from engine(s) computing shell-pair blocks.
Eigen::MatrixXd one_body(const BasisSet& basis, Engine prototype, const IntegralOptions& o) {
  const int threads = resolve_threads(o.threads);
  auto pool = engines(prototype, threads);
  const auto& shells = basis.shells();
  const auto& off = basis.shell_offsets();
  const std::size_t ns = shells.size();
  Eigen::MatrixXd M(basis.n_functions(), basis.n_functions());
  parallel_for(ns * (ns + 1) / 2, threads, [&](std::size_t task, int t) {
    const auto [s1, s2] = packed_pair(task);  // (s1 ≥ s2)
    const auto& buf = pool[t].results();
    pool[t].compute(shells[s1], shells[s2]);
    const std::size_t n1 = shells[s1].size(), n2 = shells[s2].size();
    for (std::size_t a = 0; a < n1; ++a)
      for (std::size_t b = 0; b < n2; ++b) {
        const double v = buf[0] ? buf[0][a * n2 + b] : 0.0;
        M(off[s1] + a, off[s2] + b) = v;
        M(off[s2] + b, off[s1] + a) = v;
      }
  });
  return M;
}

}  // namespace

Eigen::MatrixXd overlap_matrix(const BasisSet& basis, const IntegralOptions& options) {
  ensure_libint_initialized();
  return one_body(basis, Engine(Operator::overlap, basis.max_nprim(), basis.max_l()), options);
}

Eigen::MatrixXd cross_overlap_matrix(const BasisSet& a, const BasisSet& b, const IntegralOptions& options) {
  // The off-diagonal block of the overlap of both sets together (the atom indices only label shells).
  std::vector<libint2::Shell> shells = a.shells();
  shells.insert(shells.end(), b.shells().begin(), b.shells().end());
  std::vector<int> atoms = a.shell_atoms();
  const int first_b = atoms.empty() ? 0 : *std::max_element(atoms.begin(), atoms.end()) + 1;
  for (int atom : b.shell_atoms()) atoms.push_back(first_b + atom);
  const BasisSet both(a.name() + "+" + b.name(), std::move(shells), std::move(atoms));
  const auto na = static_cast<Eigen::Index>(a.n_functions()), nb = static_cast<Eigen::Index>(b.n_functions());
  return overlap_matrix(both, options).block(0, na, na, nb);
}

Eigen::MatrixXd kinetic_matrix(const BasisSet& basis, const IntegralOptions& options) {
  ensure_libint_initialized();
  return one_body(basis, Engine(Operator::kinetic, basis.max_nprim(), basis.max_l()), options);
}

Eigen::MatrixXd nuclear_attraction_matrix(const BasisSet& basis, const System& system,
                                          const IntegralOptions& options) {
  ensure_libint_initialized();
  Engine e(Operator::nuclear, basis.max_nprim(), basis.max_l());
  std::vector<std::pair<double, std::array<double, 3>>> charges;
  for (const Atom& a : system.atoms) charges.push_back({static_cast<double>(a.Z), a.position});
  e.set_params(charges);
  return one_body(basis, std::move(e), options);
}

Eigen::MatrixXd core_hamiltonian(const BasisSet& basis, const System& system,
                                 const IntegralOptions& options) {
  return kinetic_matrix(basis, options) + nuclear_attraction_matrix(basis, system, options);
}

Eigen::MatrixXd schwarz_bounds(const BasisSet& basis, const IntegralOptions& options) {
  Eigen::MatrixXd Q;  // (generally contracted shells from their shared primitives)
  unit_schwarz_bounds(basis, eri_units(basis), options.threads, &Q);
  return Q;
}

std::vector<double> eri_diagonal(const BasisSet& basis, const IntegralOptions& options) {
  const int threads = resolve_threads(options.threads);
  const std::vector<EriUnit> units = eri_units(basis);
  std::vector<EriUnitEngine> pool;  // (the precision of eri_columns)
  for (int t = 0; t < threads; ++t) pool.emplace_back(basis, units, options.engine_precision);
  const std::size_t n = basis.n_functions();
  std::vector<double> diag(n * n, 0.0);
  parallel_for(units.size(), threads, [&](std::size_t i, int t) {
    for (std::size_t j = 0; j <= i; ++j) {
      const EriUnit &a = units[i], &b = units[j];
      const double* v = pool[t].compute(a, b, a, b);
      if (!v) continue;
      const std::size_t na = a.n_functions(), nb = b.n_functions(), nab = na * nb;
      for (std::size_t x = 0; x < na; ++x)
        for (std::size_t y = 0; y < nb; ++y) {
          const std::size_t p = a.first_function + x, q = b.first_function + y, xy = x * nb + y;
          diag[p * n + q] = diag[q * n + p] = v[xy * nab + xy];
        }
    }
  });
  return diag;
}

Eigen::MatrixXd eri_columns(const BasisSet& basis, const std::vector<std::pair<int, int>>& shell_pairs,
                            const IntegralOptions& options) {
  const auto& shells = basis.shells();
  const std::size_t ns = shells.size(), n = basis.n_functions();
  std::vector<std::size_t> col0{0};
  for (const auto& [r, s] : shell_pairs) {
    if (r < 0 || s < 0 || static_cast<std::size_t>(r) >= ns || static_cast<std::size_t>(s) >= ns)
      throw InputError("eri_columns: shell pair (" + std::to_string(r) + ", " + std::to_string(s) +
                       ") out of range (basis has " + std::to_string(ns) + " shells)");
    col0.push_back(col0.back() + shells[r].size() * shells[s].size());
  }
  Eigen::MatrixXd out = Eigen::MatrixXd::Zero(n * n, col0.back());
  const int threads = resolve_threads(options.threads);
  const std::vector<EriUnit> units = eri_units(basis);
  const std::size_t nu = units.size();
  std::vector<EriUnitEngine> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(basis, units, options.engine_precision);
  std::vector<std::pair<EriUnit, EriUnit>> kets;  // each column pair's shells as units
  for (const auto& [r, s] : shell_pairs)
    kets.emplace_back(single_shell_unit(basis, units, std::size_t(r)), single_shell_unit(basis, units, std::size_t(s)));
  // One task per (pair k, bra unit A); B runs over A ≥ B and fills both (pq) and (qp) rows.
  parallel_for(shell_pairs.size() * nu, threads, [&](std::size_t task, int t) {
    const std::size_t k = task / nu, A = task % nu;
    const EriUnit& R = kets[k].first;
    const EriUnit& S = kets[k].second;
    const std::size_t nrs = R.n_functions() * S.n_functions();
    for (std::size_t B = 0; B <= A; ++B) {
      const EriUnit &a = units[A], &b = units[B];
      const double* v = pool[t].compute(a, b, R, S);
      if (!v) continue;
      const std::size_t na = a.n_functions(), nb = b.n_functions();
      for (std::size_t x = 0; x < na; ++x)
        for (std::size_t y = 0; y < nb; ++y) {
          const double* row = v + (x * nb + y) * nrs;
          const std::size_t p = a.first_function + x, q = b.first_function + y;
          for (std::size_t rs = 0; rs < nrs; ++rs) {
            out(p * n + q, col0[k] + rs) = row[rs];
            out(q * n + p, col0[k] + rs) = row[rs];
          }
        }
    }
  });
  return out;
}

std::vector<double> eri_full(const BasisSet& basis, const IntegralOptions& options,
                             std::size_t max_bytes) {
  const std::size_t n = basis.n_functions();
  const double bytes = 8.0 * static_cast<double>(n) * n * n * n;
  if (bytes > static_cast<double>(max_bytes))
    throw BudgetError("eri_full: n = " + std::to_string(n) + " needs " +
                      std::to_string(bytes / 1e9) + " GB, above the limit of " +
                      std::to_string(max_bytes / 1e9) + " GB; use eri_columns instead");
  std::vector<double> eri(n * n * n * n, 0.0);
  const int threads = resolve_threads(options.threads);
  const std::vector<EriUnit> units = eri_units(basis);
  const std::size_t nu = units.size();
  std::vector<EriUnitEngine> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(basis, units, options.engine_precision);
  const Eigen::MatrixXd Q = unit_schwarz_bounds(basis, units, options.threads);
  // Tasks: bra unit pairs A ≥ B; ket pairs C ≥ D with (CD) ≤ (AB); all 8 images written.
  parallel_for(nu * (nu + 1) / 2, threads, [&](std::size_t task, int t) {
    const auto [A, B] = packed_pair(task);
    for (std::size_t C = 0; C <= A; ++C)
      for (std::size_t D = 0; D <= (C == A ? B : C); ++D) {
        if (Q(A, B) * Q(C, D) < options.schwarz_threshold) continue;
        const EriUnit &ua = units[A], &ub = units[B], &uc = units[C], &ud = units[D];
        const double* v = pool[t].compute(ua, ub, uc, ud);
        if (!v) continue;
        const std::size_t n1 = ua.n_functions(), n2 = ub.n_functions(), n3 = uc.n_functions(), n4 = ud.n_functions();
        for (std::size_t a = 0; a < n1; ++a)
          for (std::size_t b = 0; b < n2; ++b)
            for (std::size_t c = 0; c < n3; ++c)
              for (std::size_t d = 0; d < n4; ++d) {
                const double x = v[((a * n2 + b) * n3 + c) * n4 + d];
                const std::size_t p = ua.first_function + a, q = ub.first_function + b, r = uc.first_function + c,
                                  s = ud.first_function + d;
                for (const auto& [i, j, k, l] : {std::array{p, q, r, s}, std::array{q, p, r, s},
                                                 std::array{p, q, s, r}, std::array{q, p, s, r},
                                                 std::array{r, s, p, q}, std::array{s, r, p, q},
                                                 std::array{r, s, q, p}, std::array{s, r, q, p}})
                  eri[((i * n + j) * n + k) * n + l] = x;
              }
      }
  });
  return eri;
}

struct EriPairColumns::Impl {
  BasisSet basis;
  IntegralOptions options;
  int threads = 1;
  std::vector<EriUnit> units;
  mutable std::vector<EriUnitEngine> pool;
  Eigen::MatrixXd Q_units, Q_shells;  // Schwarz bounds per unit pair and per shell pair
};

EriPairColumns::EriPairColumns(const BasisSet& basis, const IntegralOptions& options) : impl_(new Impl) {
  impl_->basis = basis;
  impl_->options = options;
  impl_->threads = resolve_threads(options.threads);
  impl_->units = eri_units(basis);
  for (int t = 0; t < impl_->threads; ++t) impl_->pool.emplace_back(basis, impl_->units, options.engine_precision);
  impl_->Q_units = unit_schwarz_bounds(basis, impl_->units, impl_->threads, &impl_->Q_shells);
}

EriPairColumns::~EriPairColumns() = default;

std::size_t EriPairColumns::n_rows() const {
  const std::size_t n = impl_->basis.n_functions();
  return n * (n + 1) / 2;
}

std::vector<double> EriPairColumns::diagonal() const {
  // (eri_diagonal's unit blocks, at the columns' precision: columns and diagonal round alike)
  const std::vector<double> full = eri_diagonal(impl_->basis, impl_->options);
  const std::size_t n = impl_->basis.n_functions();
  std::vector<double> diag(n_rows());
  for (std::size_t p = 0; p < n; ++p)
    for (std::size_t q = 0; q <= p; ++q) diag[p * (p + 1) / 2 + q] = full[p * n + q];
  return diag;
}

void EriPairColumns::columns(int R, int S, double* out) const {
  const auto& units = impl_->units;
  const std::size_t ns = impl_->basis.n_shells(), rows = n_rows();
  if (R < 0 || S < 0 || std::size_t(R) >= ns || std::size_t(S) >= ns)
    throw InputError("EriPairColumns: shell pair (" + std::to_string(R) + ", " + std::to_string(S) + ") out of range");
  const EriUnit r_unit = single_shell_unit(impl_->basis, units, std::size_t(R));
  const EriUnit s_unit = single_shell_unit(impl_->basis, units, std::size_t(S));
  const std::size_t nrs = r_unit.n_functions() * s_unit.n_functions();
  std::fill(out, out + nrs * rows, 0.0);
  const double thr = impl_->options.schwarz_threshold, q_rs = impl_->Q_shells(R, S);
  parallel_for(units.size(), impl_->threads, [&](std::size_t i, int t) {
    for (std::size_t j = 0; j <= i; ++j) {
      if (impl_->Q_units(i, j) * q_rs < thr) continue;
      const EriUnit &a = units[i], &b = units[j];
      const double* v = impl_->pool[t].compute(a, b, r_unit, s_unit);
      if (!v) continue;
      const std::size_t na = a.n_functions(), nb = b.n_functions();
      for (std::size_t x = 0; x < na; ++x)
        for (std::size_t y = 0; y < nb; ++y) {
          const std::size_t p = a.first_function + x, q = b.first_function + y;
          if (p < q) continue;  // diagonal unit pair: (q, p) is the same row
          const double* w = v + (x * nb + y) * nrs;
          double* o = out + p * (p + 1) / 2 + q;
          for (std::size_t c = 0; c < nrs; ++c) o[c * rows] = w[c];
        }
    }
  });
}

std::pair<int, int> function_to_shell(const BasisSet& basis, std::size_t p) {
  const auto& off = basis.shell_offsets();
  if (p >= basis.n_functions())
    throw InputError("function index " + std::to_string(p) + " out of range (n = " +
                     std::to_string(basis.n_functions()) + ")");
  const auto it = std::upper_bound(off.begin(), off.end(), p) - 1;
  return {static_cast<int>(it - off.begin()), static_cast<int>(p - *it)};
}

}  // namespace nnvmc::scf
