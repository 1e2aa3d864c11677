/// Pivoted Cholesky of the AO ERI matrix (scf::cholesky_eri_pairs) as a torch tensor.
#include "ccsd/cholesky.hpp"

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "scf/cholesky_eri.hpp"

namespace nnvmc::ccsd {

torch::Tensor cholesky_ao_eri(const scf::BasisSet& basis, double tau, const scf::IntegralOptions& options) {
  Eigen::MatrixXd L = scf::cholesky_eri_pairs(basis, tau, options);  // [rows, n_vec] column-major
  const std::int64_t n = std::int64_t(basis.n_functions()), rows = L.rows(), n_vec = L.cols();
  const auto pairs = torch::from_blob(L.data(), {n_vec, rows}, torch::TensorOptions().dtype(torch::kFloat64));
  // expand the unique pairs to [n_vec, n, n]
  std::vector<std::int64_t> full(std::size_t(n * n));
  for (std::int64_t p = 0; p < n; ++p)
    for (std::int64_t q = 0; q < n; ++q) full[std::size_t(p * n + q)] = p >= q ? p * (p + 1) / 2 + q : q * (q + 1) / 2 + p;
  return pairs.index_select(1, torch::tensor(full, torch::kLong)).view({n_vec, n, n});
}

}  // namespace nnvmc::ccsd
