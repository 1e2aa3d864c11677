/// @file jk_builder.cpp
/// In-core / direct J and K builds over unique, Schwarz-screened ERI-unit quartets.
#include "scf/jk_builder.hpp"

#include <libint2.hpp>

#include <algorithm>
#include <array>
#include <map>
#include <cmath>
#include <cstdint>
#include <string>

#include "core/errors.hpp"
#include "core/host_memory.hpp"
#include "core/log.hpp"
#include "parallel/communicator.hpp"
#include "scf/cholesky_eri.hpp"
#include "scf/dense_kernels.hpp"
#include "scf/eri_units.hpp"
#include "scf/density_fitting.hpp"
#include "scf/parallel.hpp"

namespace nnvmc::scf {

namespace {

/// One unique quartet of ERI units (scf/eri_units.hpp: a shell, or the generally contracted
/// shells that share primitives) (P ≥ Q, R ≥ S, (PQ) ≥ (RS)) with its degeneracy.
struct Quartet {
  std::uint32_t s[4];      // unit indices
  std::uint32_t bra, ket;  // indices of (s0 s1) and (s2 s3) in the unit-pair list
  std::uint32_t size[4];   // functions per unit
  std::uint32_t first[4];  // first function of each unit
  double degeneracy;      // number of distinct unit-level images under 8-fold symmetry
  std::size_t offset;     // start of its block in the in-core buffer
};

constexpr std::size_t kChunk = 128;  // quartets per parallel task of a J/K build

/// Every auxiliary shell must sit on an atom of the orbital basis, at that atom's centre (fitting
/// functions made for another geometry or another molecule would fit silently wrong densities).
void check_fitting_centres(const BasisSet& basis, const BasisSet& aux) {
  std::map<int, std::array<double, 3>> centre;
  for (std::size_t s = 0; s < basis.n_shells(); ++s) centre[basis.shell_atoms()[s]] = basis.shells()[s].O;
  for (std::size_t s = 0; s < aux.n_shells(); ++s) {
    const auto it = centre.find(aux.shell_atoms()[s]);
    const auto& o = aux.shells()[s].O;
    if (it == centre.end() || std::abs(o[0] - it->second[0]) + std::abs(o[1] - it->second[1]) +
                                      std::abs(o[2] - it->second[2]) > 1e-10)
      throw Error("JKBuilder: auxiliary basis '" + aux.name() + "' shell " + std::to_string(s) + " is not on atom " +
                  std::to_string(aux.shell_atoms()[s]) + " of the orbital basis (another geometry or molecule?)");
  }
}

}  // namespace

struct JKBuilder::Impl {
  BasisSet basis;
  JKOptions options;
  int threads = 1;
  std::vector<EriUnit> units;
  std::size_t max_unit_functions = 0;
  std::vector<Quartet> quartets;
  std::vector<libint2::ShellPair> pair_data;  // primitive-pair data of each kept unit pair (empty: from primitives)
  std::vector<double> eri;   // in-core blocks (empty when direct)
  bool in_core = false;
  std::vector<EriUnitEngine> engines;
  /// Three-index mode (Cholesky or density fitting): L [n(n+1)/2, M] over the pairs p ≥ q (row
  /// p(p+1)/2 + q), shared with whoever gave them (Cholesky CCSD) rather than copied or expanded
  std::shared_ptr<const Eigen::MatrixXd> pairs;

  /// J and K from the three-index vectors.
  void build_cholesky(const Eigen::MatrixXd& d_coulomb, const std::vector<Eigen::MatrixXd>& d_exchange,
                      Eigen::MatrixXd& J, std::vector<Eigen::MatrixXd>& K) const {
    const Eigen::MatrixXd& L = *pairs;
    const Eigen::Index n = Eigen::Index(basis.n_functions()), M = L.cols();
    // J: c_x = Σ_pq L_x(pq) D_pq = Σ_{p≥q} L(pq, x) D_pq (2 off the diagonal), J_pq = Σ_x L(pq, x) c_x
    Eigen::VectorXd d_packed(L.rows());
    for (Eigen::Index p = 0; p < n; ++p)
      for (Eigen::Index q = 0; q <= p; ++q) d_packed(p * (p + 1) / 2 + q) = (p == q ? 1.0 : 2.0) * d_coulomb(p, q);
    // K = Σ_x (L_x W)(L_x W)ᵀ for each density D = W₊W₊ᵀ − W₋W₋ᵀ (eigenvectors scaled by sqrt|λ|,
    // negligible λ dropped).
    struct Factor {
      std::size_t k;
      double sign;
      Eigen::MatrixXd W;  // [n, r]
    };
    std::vector<Factor> factors;
    Eigen::Index r_max = 0;
    for (std::size_t k = 0; k < d_exchange.size(); ++k) {
      Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(d_exchange[k]);
      const Eigen::VectorXd& lambda = es.eigenvalues();
      const double keep = 1e-12 * std::max(1e-300, lambda.cwiseAbs().maxCoeff());
      for (const double sign : {1.0, -1.0}) {
        std::vector<Eigen::Index> cols;
        for (Eigen::Index i = 0; i < n; ++i)
          if (sign * lambda(i) > keep) cols.push_back(i);
        if (cols.empty()) continue;
        Eigen::MatrixXd W(n, Eigen::Index(cols.size()));
        for (std::size_t j = 0; j < cols.size(); ++j)
          W.col(Eigen::Index(j)) = es.eigenvectors().col(cols[j]) * std::sqrt(std::abs(lambda(cols[j])));
        r_max = std::max(r_max, W.cols());
        factors.push_back({k, sign, std::move(W)});
      }
    }
    K.assign(d_exchange.size(), Eigen::MatrixXd::Zero(n, n));
    // J and K in one pass over L by blocks of nb vectors: the vectors are read from memory once per
    // build, J's two products run on each block while it is in cache. For K, U [n, nb·n] holds the
    // block's matrices side by side (unpacked from the pairs on the threads, each in its own
    // cache-sized n² block), Y = Uᵀ W [nb·n, r] the blocks L_x W (rows x·n + p; L_x is
    // symmetric), and the same memory read as [n, nb·r] (column x + nb·i = column i of L_x W)
    // gives K ±= Y Yᵀ: two GEMMs per block and factor.
    constexpr Eigen::Index kBlockDoubles = Eigen::Index(1) << 20;  // U: 8 MB (one matrix where n² is more)
    const Eigen::Index nb_max = std::max<Eigen::Index>(1, std::min(M, kBlockDoubles / std::max<Eigen::Index>(1, n * n)));
    Eigen::MatrixXd U(n, factors.empty() ? 0 : nb_max * n), Y(nb_max * n, r_max);
    const Eigen::Index rows = L.rows();
    Eigen::VectorXd c(M), j_packed = Eigen::VectorXd::Zero(rows);
    for (Eigen::Index x0 = 0; x0 < M; x0 += nb_max) {
      const Eigen::Index nb = std::min(nb_max, M - x0);
      parallel_loop(std::size_t(nb), threads, [&](std::size_t x) {
        const double* col = L.col(x0 + Eigen::Index(x)).data();
        c(x0 + Eigen::Index(x)) = Eigen::Map<const Eigen::VectorXd>(col, rows).dot(d_packed);
        if (factors.empty()) return;
        double* u = U.data() + Eigen::Index(x) * n * n;
        // the upper triangle column by column (U(q ≤ p, p) = L(p, q): packed row p), then the
        // lower one as its transpose in tiles
        for (Eigen::Index p = 0; p < n; ++p) std::copy_n(col + p * (p + 1) / 2, p + 1, u + n * p);
        constexpr Eigen::Index kTile = 16;
        for (Eigen::Index q0 = 0; q0 < n; q0 += kTile)
          for (Eigen::Index p0 = q0; p0 < n; p0 += kTile)
            for (Eigen::Index q = q0; q < std::min(n, q0 + kTile); ++q)
              for (Eigen::Index p = std::max(p0, q + 1); p < std::min(n, p0 + kTile); ++p) u[p + n * q] = u[q + n * p];
      });
      gemm(false, false, rows, 1, nb, 1.0, L.col(x0).data(), rows, c.data() + x0, nb, 1.0, j_packed.data(), rows, threads);
      for (const Factor& f : factors) {
        const Eigen::Index r = f.W.cols();
        gemm(true, false, nb * n, r, n, 1.0, U.data(), n, f.W.data(), n, 0.0, Y.data(), nb * n, threads);
        gemm(false, true, n, n, nb * r, f.sign, Y.data(), n, Y.data(), n, 1.0, K[f.k].data(), n, threads);
      }
    }
    J.resize(n, n);
    for (Eigen::Index p = 0; p < n; ++p)
      for (Eigen::Index q = 0; q <= p; ++q) J(p, q) = J(q, p) = j_packed(p * (p + 1) / 2 + q);
    // (symmetric up to rounding: made exact)
    for (auto& Kk : K) Kk = (0.5 * (Kk + Kk.transpose())).eval();
  }

  /// Adds the contributions of one quartet block (values v) to per-thread accumulators.
  /// Since J = (A + Aᵀ)/4 and K = (B + Bᵀ)/8, each contribution may go to (i, j) or (j, i):
  /// the innermost loop over s uses the orientation that makes memory access contiguous
  /// (columns of the column-major matrices; D is symmetric).
  /// w: scratch of max_unit_functions doubles.
  void digest(const Quartet& qt, const double* v, const double* dc,
              const std::vector<const double*>& dx, double* A, const std::vector<double*>& B, double* w) const {
    const std::size_t n = basis.n_functions();
    const std::size_t n1 = qt.size[0], n2 = qt.size[1], n3 = qt.size[2], n4 = qt.size[3];
    const std::size_t o1 = qt.first[0], o2 = qt.first[1], o3 = qt.first[2], o4 = qt.first[3];
    const std::size_t nx = dx.size();
    const double deg = qt.degeneracy;
    for (std::size_t a = 0; a < n1; ++a) {
      const std::size_t p = o1 + a;
      for (std::size_t b = 0; b < n2; ++b) {
        const std::size_t q = o2 + b;
        const double dc_pq = dc[p + q * n];
        double j_pq = 0;
        for (std::size_t c = 0; c < n3; ++c) {
          const std::size_t r = o3 + c;
          const double* row = v + ((a * n2 + b) * n3 + c) * n4;
          for (std::size_t d = 0; d < n4; ++d) w[d] = row[d] * deg;
          // J: A(p,q) += Σ_s D(r,s) w_s and A(s,r) += D(p,q) w_s.
          const double* dc_r = dc + r * n + o4;
          double* A_r = A + r * n + o4;
          for (std::size_t d = 0; d < n4; ++d) {
            j_pq += dc_r[d] * w[d];
            A_r[d] += dc_pq * w[d];
          }
          // K: B(p,r) += D(q,s) w, B(q,r) += D(p,s) w, B(s,p) += D(q,r) w, B(s,q) += D(p,r) w.
          for (std::size_t k = 0; k < nx; ++k) {
            const double* D = dx[k];
            double* Bk = B[k];
            const double* D_q = D + q * n + o4;
            const double* D_p = D + p * n + o4;
            double* B_p = Bk + p * n + o4;
            double* B_q = Bk + q * n + o4;
            const double d_qr = D[q + r * n], d_pr = D[p + r * n];
            double k_pr = 0, k_qr = 0;
            for (std::size_t d = 0; d < n4; ++d) {
              k_pr += D_q[d] * w[d];
              k_qr += D_p[d] * w[d];
              B_p[d] += d_qr * w[d];
              B_q[d] += d_pr * w[d];
            }
            Bk[p + r * n] += k_pr;
            Bk[q + r * n] += k_qr;
          }
        }
        A[p + q * n] += j_pq;
      }
    }
  }

  /// Computes one quartet on `engine`; returns its block or nullptr if libint2 screened it out.
  const double* compute(EriUnitEngine& engine, const Quartet& q) const {
    return engine.compute(units[q.s[0]], units[q.s[1]], units[q.s[2]], units[q.s[3]], &pair_data[q.bra],
                          &pair_data[q.ket]);
  }

  static std::size_t block_size(const Quartet& q) {
    return std::size_t{q.size[0]} * q.size[1] * q.size[2] * q.size[3];
  }
};

JKBuilder::JKBuilder(const BasisSet& basis, const JKOptions& options) : impl_(new Impl) {
  auto& m = *impl_;
  m.basis = basis;
  m.options = options;
  m.threads = resolve_threads(options.integrals.threads);
  ensure_libint_initialized();
  if (options.df_basis && options.cholesky_tau > 0)
    throw InputError("scf: density fitting and Cholesky ERIs exclude each other (give one)");
  if (options.cholesky_tau > 0 || options.df_basis) {
    const Eigen::Index n = Eigen::Index(basis.n_functions());
    if (options.df_basis) {
      check_fitting_centres(basis, *options.df_basis);
      // (pq|P) over the pairs, turned into the vectors in place: n(n+1)/2 · n_aux doubles
      const HostMemory host = host_memory();
      const std::int64_t share = host.share(parallel::world().local_size());
      const double bytes = 8.0 * double(n * (n + 1) / 2) * double(options.df_basis->n_functions());
      if (share >= 0 && bytes > 0.8 * double(share))
        throw BudgetError(strfmt("scf: the density-fitted integrals of this molecule take %.2f GB (%ld pairs x %zu "
                                 "auxiliary functions), more than 80 %% of the %.2f GB this process can still allocate "
                                 "(%s); use a smaller auxiliary basis (--df-basis) or Cholesky vectors with a looser "
                                 "threshold (--cholesky 1e-4)",
                                 bytes / 1e9, static_cast<long>(n * (n + 1) / 2), options.df_basis->n_functions(),
                                 double(share) / 1e9, host.available_source.c_str()));
      m.pairs = std::make_shared<const Eigen::MatrixXd>(density_fitted_pairs(basis, *options.df_basis, options.integrals));
    } else {
      m.pairs = options.cholesky_pairs ? options.cholesky_pairs
                                       : std::make_shared<const Eigen::MatrixXd>(
                                             cholesky_eri_pairs(basis, options.cholesky_tau, options.integrals));
    }
    if (m.pairs->rows() != n * (n + 1) / 2)
      throw Error("JKBuilder: given Cholesky vectors have " + std::to_string(m.pairs->rows()) + " pair rows, the basis " +
                  std::to_string(n * (n + 1) / 2));
    return;
  }

  // (engines for the unit quartets: the three-index modes above need none)
  m.units = eri_units(basis);
  for (int t = 0; t < m.threads; ++t) m.engines.emplace_back(basis, m.units, options.integrals.engine_precision);
  for (const EriUnit& u : m.units) m.max_unit_functions = std::max(m.max_unit_functions, u.n_functions());
  // Unit pairs that can contribute at all, then unique pair-of-pairs quartets.
  const Eigen::MatrixXd Q = unit_schwarz_bounds(basis, m.units, m.threads);
  const double q_max = Q.size() ? Q.maxCoeff() : 0.0;
  const double thr = options.integrals.schwarz_threshold;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs;
  for (std::uint32_t P = 0; P < m.units.size(); ++P)
    for (std::uint32_t R = 0; R <= P; ++R)
      if (Q(P, R) * q_max >= thr) pairs.push_back({P, R});
  const double ln_prec = std::log(options.integrals.engine_precision);
  for (const auto& [P, R] : pairs) {
    const EriUnit &a = m.units[P], &b = m.units[R];
    if (a.from_primitives || b.from_primitives)
      m.pair_data.emplace_back();  // (pairs of primitives: libint2 makes their data per call)
    else
      m.pair_data.emplace_back(a.parts[0], b.parts[0], ln_prec);
  }
  // Counted first: the list is allocated once (it used to double while growing: 22.5 M quartets
  // of an H600 chain, 1.6 GB, peaked at 3.2 GB), and a list the host cannot hold is refused with
  // advice instead of failing in the allocator or in the kernel's OOM killer.
  const auto kept = [&](std::size_t i, std::size_t j) {  // the quartet (pair i | pair j) passes the screening
    return Q(pairs[i].first, pairs[i].second) * Q(pairs[j].first, pairs[j].second) >= thr;
  };
  std::size_t n_quartets = 0;
  for (std::size_t i = 0; i < pairs.size(); ++i)
    for (std::size_t j = 0; j <= i; ++j) n_quartets += kept(i, j) ? 1 : 0;
  // (every rank of a node builds its own list: each has its share of the node's memory)
  const HostMemory host = host_memory();
  const std::int64_t share = host.share(parallel::world().local_size());
  const double available = share >= 0 ? static_cast<double>(share) : HUGE_VAL;
  const double list_bytes = static_cast<double>(n_quartets) * sizeof(Quartet);
  if (list_bytes > 0.6 * available)
    throw BudgetError(strfmt("scf: %zu ERI quartets (of shells, or of generally contracted shells together) of this molecule and basis pass the Schwarz screening "
                             "(threshold %g); their list alone takes %.2f GB, more than 60 %% of the %.2f GB this "
                             "process can still allocate (%s). Use density-fitted (scf --df) or Cholesky-decomposed "
                             "ERIs (scf --cholesky 1e-6, ccsd --cholesky 1e-5), or a looser --schwarz",
                             n_quartets, thr, list_bytes / 1e9, available / 1e9, host.available_source.c_str()));
  m.quartets.reserve(n_quartets);
  std::size_t offset = 0;
  for (std::size_t i = 0; i < pairs.size(); ++i)
    for (std::size_t j = 0; j <= i; ++j) {
      if (!kept(i, j)) continue;
      const auto [P, R] = pairs[i];
      const auto [S, T] = pairs[j];
      const double deg = (P == R ? 1.0 : 2.0) * (S == T ? 1.0 : 2.0) * (i == j ? 1.0 : 2.0);
      Quartet q{{P, R, S, T}, static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(j), {}, {}, deg, offset};
      for (int k = 0; k < 4; ++k) {
        q.size[k] = static_cast<std::uint32_t>(m.units[q.s[k]].n_functions());
        q.first[k] = static_cast<std::uint32_t>(m.units[q.s[k]].first_function);
      }
      m.quartets.push_back(q);
      offset += m.block_size(m.quartets.back());
    }

  // In core when the ERIs fit the limit and half of what the host leaves beside the list.
  const double incore_limit =
      std::min(static_cast<double>(options.max_incore_mb) * double(std::size_t{1} << 20), 0.5 * (available - list_bytes));
  m.in_core = static_cast<double>(offset) * sizeof(double) <= incore_limit;
  if (!m.in_core) return;
  m.eri.assign(offset, 0.0);
  // (each quartet into its own place, so any hand-out gives the same values: tasks of fewer
  // quartets where kChunk would leave under 8 per thread; a heavy atom has few, unequal unit
  // quartets, Fe cc-pVDZ's 55 were one task on one thread. The builds keep kChunk, statically:
  // smaller tasks there reorder the sums, and open-shell SCFs from SAD, which land in a state
  // rounding picks, moved: Fe/STO-3G UHF stopped converging in 100 iterations.)
  const std::size_t fill_chunk = std::clamp<std::size_t>(m.quartets.size() / (8 * std::size_t(m.threads)), 1, kChunk);
  const std::size_t n_chunks = (m.quartets.size() + fill_chunk - 1) / fill_chunk;
  parallel_for(n_chunks, m.threads, [&](std::size_t chunk, int t) {
    const std::size_t end = std::min(m.quartets.size(), (chunk + 1) * fill_chunk);
    for (std::size_t i = chunk * fill_chunk; i < end; ++i) {
      const Quartet& q = m.quartets[i];
      if (const double* v = m.compute(m.engines[t], q)) std::copy_n(v, m.block_size(q), m.eri.begin() + q.offset);
    }
  });
}

JKBuilder::~JKBuilder() = default;

bool JKBuilder::in_core() const { return impl_->in_core; }
std::size_t JKBuilder::cholesky_vectors() const { return impl_->pairs ? std::size_t(impl_->pairs->cols()) : 0; }
std::size_t JKBuilder::n_quartets() const { return impl_->quartets.size(); }
std::size_t JKBuilder::stored_doubles() const {
  return impl_->eri.size() + (impl_->pairs ? std::size_t(impl_->pairs->size()) : 0);
}

void JKBuilder::build(const Eigen::MatrixXd& d_coulomb, const std::vector<Eigen::MatrixXd>& d_exchange,
                      Eigen::MatrixXd& J, std::vector<Eigen::MatrixXd>& K) const {
  auto& m = *impl_;
  if (m.pairs) return m.build_cholesky(d_coulomb, d_exchange, J, K);
  const std::size_t n = m.basis.n_functions(), nx = d_exchange.size();
  // Per-thread accumulators: A for J, B[k] for K[k].
  std::vector<Eigen::MatrixXd> A(m.threads, Eigen::MatrixXd::Zero(n, n));
  std::vector<std::vector<Eigen::MatrixXd>> B(m.threads,
                                              std::vector<Eigen::MatrixXd>(nx, Eigen::MatrixXd::Zero(n, n)));
  std::vector<const double*> dx;
  for (const auto& D : d_exchange) dx.push_back(D.data());
  const std::size_t n_chunks = (m.quartets.size() + kChunk - 1) / kChunk;
  // Static chunk-to-thread assignment: each accumulator sums a fixed set of quartets in a fixed
  // order, so J and K are bit-reproducible (dynamic hand-out made them differ in the last bit).
  parallel_for_static(n_chunks, m.threads, [&](std::size_t chunk, int t) {
    std::vector<double> w(m.max_unit_functions);  // one row of a block
    std::vector<double*> b;
    for (auto& Bk : B[t]) b.push_back(Bk.data());
    const std::size_t end = std::min(m.quartets.size(), (chunk + 1) * kChunk);
    for (std::size_t i = chunk * kChunk; i < end; ++i) {
      const Quartet& q = m.quartets[i];
      const double* v = nullptr;
      if (m.in_core) {
        v = m.eri.data() + q.offset;
      } else {
        v = m.compute(m.engines[t], q);
        if (!v) continue;
      }
      m.digest(q, v, d_coulomb.data(), dx, A[t].data(), b, w.data());
    }
  });
  Eigen::MatrixXd a_sum = Eigen::MatrixXd::Zero(n, n);
  for (const auto& a : A) a_sum += a;
  J = 0.25 * (a_sum + a_sum.transpose());
  K.assign(nx, Eigen::MatrixXd::Zero(n, n));
  for (std::size_t k = 0; k < nx; ++k) {
    Eigen::MatrixXd b_sum = Eigen::MatrixXd::Zero(n, n);
    for (const auto& bt : B) b_sum += bt[k];
    K[k] = 0.125 * (b_sum + b_sum.transpose());
  }
}

}  // namespace nnvmc::scf
