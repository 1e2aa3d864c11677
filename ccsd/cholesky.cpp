/// Pivoted Cholesky of the AO ERI matrix (scf::cholesky_eri_pairs) as a torch tensor.
#include "ccsd/cholesky.hpp"

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "scf/cholesky_eri.hpp"

namespace nnvmc::ccsd {

torch::Tensor expand_pairs(const Eigen::MatrixXd& pairs, std::int64_t n) {
  const std::int64_t rows = pairs.rows(), n_vec = pairs.cols();
  if (rows != n * (n + 1) / 2)
    throw Error("expand_pairs: " + std::to_string(rows) + " pair rows for " + std::to_string(n) + " functions");
  // column-major [rows, n_vec] is row-major [n_vec, rows]
  const auto t = torch::from_blob(const_cast<double*>(pairs.data()), {n_vec, rows}, torch::TensorOptions().dtype(torch::kFloat64));
  std::vector<std::int64_t> full(std::size_t(n * n));
  for (std::int64_t p = 0; p < n; ++p)
    for (std::int64_t q = 0; q < n; ++q) full[std::size_t(p * n + q)] = p >= q ? p * (p + 1) / 2 + q : q * (q + 1) / 2 + p;
  return t.index_select(1, torch::tensor(full, torch::kLong)).view({n_vec, n, n});  // a copy: owns its memory
}

torch::Tensor cholesky_ao_eri(const scf::BasisSet& basis, double tau, const scf::IntegralOptions& options) {
  return expand_pairs(scf::cholesky_eri_pairs(basis, tau, options), std::int64_t(basis.n_functions()));
}

}  // namespace nnvmc::ccsd
