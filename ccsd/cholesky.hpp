#pragma once
/// @file cholesky.hpp
/// Pivoted (incomplete) Cholesky decomposition of the AO ERI matrix (pq)×(rs).
#include <Eigen/Dense>
#include <torch/types.h>

#include <cstdint>

#include "scf/basis.hpp"
#include "scf/integrals.hpp"

namespace nnvmc::ccsd {

/// AO Cholesky vectors L [n_vec, n, n] (symmetric in the last two axes): (pq|rs) ≈ Σ_x L_xpq L_xrs
/// with every residual diagonal below tau. The largest residual diagonal picks the next shell
/// pair; its ERI columns are computed on demand (never the n⁴ tensor) over the unique pairs
/// p ≥ q, the earlier vectors are subtracted from them in one GEMM, and pivots are taken inside
/// the block while their diagonal stays above max(tau, 1e-2 × the largest diagonal).
/// @throws InputError if tau <= 0.
torch::Tensor cholesky_ao_eri(const scf::BasisSet& basis, double tau, const scf::IntegralOptions& options = {});

/// Pair vectors [n(n+1)/2, n_vec] (scf::cholesky_eri_pairs' layout, row p(p+1)/2 + q for p ≥ q,
/// as the SCF's Cholesky J/K build takes them) expanded to L [n_vec, n, n].
torch::Tensor expand_pairs(const Eigen::MatrixXd& pairs, std::int64_t n);

}  // namespace nnvmc::ccsd
