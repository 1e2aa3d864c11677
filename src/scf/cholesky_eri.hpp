#pragma once
/// @file cholesky_eri.hpp
/// Pivoted (incomplete) Cholesky decomposition of the AO ERI matrix (pq)×(rs), with ERI
/// columns computed on demand (never the n⁴ tensor). Used by the Cholesky J/K build of the
/// SCF and, through ccsd::cholesky_ao_eri, by Cholesky CCSD.
#include <Eigen/Dense>

#include "scf/basis.hpp"
#include "scf/integrals.hpp"

namespace nnvmc::scf {

/// Cholesky vectors over the unique function pairs p ≥ q (row p(p+1)/2 + q):
/// (pq|rs) ≈ Σ_x L(row(p,q), x) · L(row(r,s), x), with every residual diagonal below tau.
/// The largest residual diagonal picks the next shell pair; its ERI columns are computed, the
/// earlier vectors are subtracted from them in one GEMM, and pivots are taken inside the block
/// while their diagonal stays above max(tau, 1e-2 × the largest diagonal).
/// The block updates run on the installed GEMM (scf/dense_kernels.hpp).
/// @return L [n(n+1)/2, n_vec], column-major (vector x is column x)
/// @throws InputError if tau <= 0.
Eigen::MatrixXd cholesky_eri_pairs(const BasisSet& basis, double tau, const IntegralOptions& options = {});

}  // namespace nnvmc::scf
