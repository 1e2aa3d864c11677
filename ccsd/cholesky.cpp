/// Pivoted Cholesky of the AO ERI matrix over unique function pairs, ERI columns on demand.
#include "ccsd/cholesky.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/errors.hpp"

namespace nnvmc::ccsd {

torch::Tensor cholesky_ao_eri(const scf::BasisSet& basis, double tau, const scf::IntegralOptions& options) {
  if (!(tau > 0)) throw InputError("Cholesky threshold must be positive");
  const scf::EriPairColumns eri(basis, options);
  const std::int64_t n = std::int64_t(basis.n_functions()), rows = std::int64_t(eri.n_rows());
  const auto& off = basis.shell_offsets();
  const auto opt = torch::TensorOptions().dtype(torch::kFloat64);
  torch::Tensor d = torch::from_blob(eri.diagonal().data(), {rows}, opt).clone();  // residual diagonal
  double* dd = d.data_ptr<double>();
  torch::Tensor L = torch::empty({std::min<std::int64_t>(rows, 8 * n), rows}, opt);  // vectors as rows
  std::int64_t n_vec = 0;
  std::vector<double> block_buf;
  while (n_vec < rows) {
    const std::int64_t piv = d.argmax().item<std::int64_t>();
    const double dmax = dd[piv];
    if (dmax < tau) break;
    // the pivot's shell pair (P ≥ Q) and its candidate rows (unique pairs p ≥ q inside it)
    std::int64_t p = std::int64_t(std::sqrt(8.0 * double(piv) + 1) - 1) / 2;
    while (p * (p + 1) / 2 > piv) --p;
    while ((p + 1) * (p + 2) / 2 <= piv) ++p;
    const std::int64_t q = piv - p * (p + 1) / 2;
    const int P = scf::function_to_shell(basis, std::size_t(p)).first, Q = scf::function_to_shell(basis, std::size_t(q)).first;
    const std::int64_t np = std::int64_t(off[P + 1] - off[P]), nq = std::int64_t(off[Q + 1] - off[Q]), m = np * nq;
    block_buf.resize(std::size_t(m * rows));
    eri.columns(P, Q, block_buf.data());
    torch::Tensor B = torch::from_blob(block_buf.data(), {m, rows}, opt);  // column c = a·nq + b as a row
    std::vector<std::int64_t> cand_row, cand_col;
    for (std::int64_t a = 0; a < np; ++a)
      for (std::int64_t b = 0; b < nq; ++b) {
        const std::int64_t pp = std::int64_t(off[P]) + a, qq = std::int64_t(off[Q]) + b;
        if (pp < qq) continue;  // P = Q: (b, a) is the same row
        cand_row.push_back(pp * (pp + 1) / 2 + qq), cand_col.push_back(a * nq + b);
      }
    // subtract every earlier vector at once: B −= L[:, cand]ᵀ L
    const torch::Tensor rows_t = torch::tensor(cand_row, torch::kLong), cols_t = torch::tensor(cand_col, torch::kLong);
    torch::Tensor Bc = B.index_select(0, cols_t);  // [candidates, rows]
    if (n_vec > 0) {
      const torch::Tensor Lk = L.narrow(0, 0, n_vec);
      Bc.addmm_(Lk.index_select(1, rows_t).t(), Lk, /*beta=*/1.0, /*alpha=*/-1.0);
    }
    const std::int64_t first = n_vec;
    while (n_vec < rows) {
      std::int64_t best = -1;
      double best_d = tau;
      for (std::size_t k = 0; k < cand_row.size(); ++k) {
        const double dk = dd[cand_row[k]];
        if (dk > best_d && dk > 1e-2 * dmax) best_d = dk, best = std::int64_t(k);
      }
      if (best < 0) break;
      if (n_vec == L.size(0)) L = torch::cat({L, torch::empty({L.size(0), rows}, opt)});
      torch::Tensor v = L[n_vec];
      v.copy_(Bc[best]);
      for (std::int64_t x = first; x < n_vec; ++x)  // vectors of this block, made after Bc was updated
        v.add_(L[x], -L[x][cand_row[std::size_t(best)]].item<double>());
      v.div_(std::sqrt(best_d));
      d.sub_(v.square());
      dd[cand_row[std::size_t(best)]] = 0;
      ++n_vec;
    }
  }
  // expand the unique pairs to [n_vec, n, n]
  std::vector<std::int64_t> full(std::size_t(n * n));
  for (std::int64_t p = 0; p < n; ++p)
    for (std::int64_t q = 0; q < n; ++q) full[std::size_t(p * n + q)] = p >= q ? p * (p + 1) / 2 + q : q * (q + 1) / 2 + p;
  return L.narrow(0, 0, n_vec).index_select(1, torch::tensor(full, torch::kLong)).view({n_vec, n, n});
}

}  // namespace nnvmc::ccsd
