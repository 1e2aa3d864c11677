#pragma once
/// @file residual.hpp
/// Closed-shell CCSD residuals in the T1-dressed formulation (Koch et al., J. Chem. Phys.
/// 104, 4157 (1996)); t1 [o, v] = t_i^a, t2 [o, v, o, v] = t_ij^ab, u = 2 t_ij^ab − t_ij^ba.
#include <torch/types.h>

#include "ccsd/dressed.hpp"

namespace nnvmc::ccsd {

/// Ω1 [o, v] and Ω2 [o, v, o, v]; the amplitudes solve Ω = 0.
struct Residual {
  torch::Tensor r1;  ///< singles residual Ω_ai stored as [i, a]
  torch::Tensor r2;  ///< doubles residual Ω_aibj stored as [i, a, j, b]
};

/// Residuals for (t1, t2); `h` must be dressed with t1. Every heavy term is a planned
/// contraction of h's Contractor.
Residual ccsd_residual(const DressedHamiltonian& h, Contractor& c, const torch::Tensor& t1,
                       const torch::Tensor& t2);

/// Correlation energy Σ (t_ij^ab + t_i^a t_j^b)(2(ia|jb) − (ib|ja)); g_ovov [o, v, o, v].
double ccsd_correlation_energy(const torch::Tensor& g_ovov, const torch::Tensor& t1, const torch::Tensor& t2);

}  // namespace nnvmc::ccsd
