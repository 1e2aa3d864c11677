/// Pivoted Cholesky of the AO ERI matrix over unique function pairs, ERI columns on demand.
#include "scf/cholesky_eri.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/errors.hpp"
#include "scf/dense_kernels.hpp"
#include "scf/parallel.hpp"

namespace nnvmc::scf {

Eigen::MatrixXd cholesky_eri_pairs(const BasisSet& basis, double tau, const IntegralOptions& options) {
  if (!(tau > 0)) throw InputError("Cholesky threshold must be positive");
  const EriPairColumns eri(basis, options);
  const std::int64_t n = std::int64_t(basis.n_functions()), rows = std::int64_t(eri.n_rows());
  const auto& off = basis.shell_offsets();
  std::vector<double> d = eri.diagonal();  // residual diagonal
  Eigen::MatrixXd L(rows, std::min<std::int64_t>(rows, 8 * n));
  std::int64_t n_vec = 0;
  std::vector<double> block_buf;
  const int threads = resolve_threads(options.threads);
  while (n_vec < rows) {
    const std::int64_t piv = std::max_element(d.begin(), d.end()) - d.begin();
    const double dmax = d[std::size_t(piv)];
    if (dmax < tau) break;
    // the pivot's shell pair (P ≥ Q) and its candidate rows (unique pairs p ≥ q inside it)
    std::int64_t p = std::int64_t(std::sqrt(8.0 * double(piv) + 1) - 1) / 2;
    while (p * (p + 1) / 2 > piv) --p;
    while ((p + 1) * (p + 2) / 2 <= piv) ++p;
    const std::int64_t q = piv - p * (p + 1) / 2;
    const int P = function_to_shell(basis, std::size_t(p)).first, Q = function_to_shell(basis, std::size_t(q)).first;
    const std::int64_t np = std::int64_t(off[P + 1] - off[P]), nq = std::int64_t(off[Q + 1] - off[Q]), m = np * nq;
    block_buf.resize(std::size_t(m * rows));
    eri.columns(P, Q, block_buf.data());
    const Eigen::Map<const Eigen::MatrixXd> B(block_buf.data(), rows, m);  // column c = a·nq + b
    std::vector<std::int64_t> cand_row, cand_col;
    for (std::int64_t a = 0; a < np; ++a)
      for (std::int64_t b = 0; b < nq; ++b) {
        const std::int64_t pp = std::int64_t(off[P]) + a, qq = std::int64_t(off[Q]) + b;
        if (pp < qq) continue;  // P = Q: (b, a) is the same row
        cand_row.push_back(pp * (pp + 1) / 2 + qq), cand_col.push_back(a * nq + b);
      }
    const std::int64_t nc = std::int64_t(cand_row.size());
    Eigen::MatrixXd Bc(rows, nc);
    for (std::int64_t k = 0; k < nc; ++k) Bc.col(k) = B.col(cand_col[std::size_t(k)]);
    // subtract every earlier vector at once: Bc −= L L[cand, :]ᵀ
    if (n_vec > 0) {
      Eigen::MatrixXd Lc(nc, n_vec);
      for (std::int64_t k = 0; k < nc; ++k) Lc.row(k) = L.row(cand_row[std::size_t(k)]).head(n_vec);
      gemm(false, true, rows, nc, n_vec, -1.0, L.data(), L.rows(), Lc.data(), nc, 1.0, Bc.data(), rows, threads);
    }
    const std::int64_t first = n_vec;
    while (n_vec < rows) {
      std::int64_t best = -1;
      double best_d = tau;
      for (std::int64_t k = 0; k < nc; ++k) {
        const double dk = d[std::size_t(cand_row[std::size_t(k)])];
        if (dk > best_d && dk > 1e-2 * dmax) best_d = dk, best = k;
      }
      if (best < 0) break;
      if (n_vec == L.cols()) L.conservativeResize(Eigen::NoChange, std::min<std::int64_t>(rows, 2 * L.cols()));
      const std::int64_t row = cand_row[std::size_t(best)];
      auto v = L.col(n_vec);
      v = Bc.col(best);
      for (std::int64_t x = first; x < n_vec; ++x) v -= L(row, x) * L.col(x);  // this block's vectors
      v /= std::sqrt(best_d);
      for (std::int64_t i = 0; i < rows; ++i) d[std::size_t(i)] -= v(i) * v(i);
      d[std::size_t(row)] = 0;
      ++n_vec;
    }
  }
  L.conservativeResize(Eigen::NoChange, n_vec);
  return L;
}

}  // namespace nnvmc::scf
