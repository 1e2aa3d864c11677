#pragma once
/// @file cholesky.hpp
/// Pivoted (incomplete) Cholesky decomposition of the AO ERI matrix (pq)×(rs).
#include <Eigen/Dense>

#include "scf/basis.hpp"

namespace nnvmc::ccsd {

/// AO Cholesky vectors: (pq|rs) ≈ Σ_x L(pq, x) L(rs, x), with max residual diagonal < tau.
/// Result: [n·n, n_vec] column-major (row p·n + q). Columns of the ERI matrix are computed
/// a shell pair at a time (scf::eri_columns). @throws InputError if tau <= 0.
Eigen::MatrixXd cholesky_ao_eri(const scf::BasisSet& basis, double tau);

}  // namespace nnvmc::ccsd
