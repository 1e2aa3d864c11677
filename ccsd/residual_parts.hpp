#pragma once
/// @file residual_parts.hpp
/// The part of the doubles residual both iteration modes share (internal to ccsd).
#include <torch/types.h>

#include "ccsd/contractor.hpp"

namespace nnvmc::ccsd {

/// Dressed quantities the shared doubles terms read.
struct DoublesInputs {
  torch::Tensor t2;      ///< [o, v, o, v]
  torch::Tensor u;       ///< 2 t2 − t2 with a ↔ b
  torch::Tensor g_ovov;  ///< (kc|ld) (bare = dressed)
  torch::Tensor L_ovov;  ///< 2(kc|ld) − (kd|lc)
  torch::Tensor oovv;    ///< ĝ_kiac [o, o, v, v]
  torch::Tensor voov;    ///< ĝ_aikc [v, o, o, v]
  torch::Tensor W;       ///< W_kilj = ĝ_kilj + Σ_cd t_icjd (kc|ld) [o, o, o, o], or undefined: no B2
  torch::Tensor Foo;     ///< dressed Fock, active occupied block [o, o]
  torch::Tensor Fvv;     ///< virtual block [v, v]
  torch::Tensor extra;   ///< optional X [i, a, j, b] added inside P(·) (X + Xᵀ), or undefined
};

/// B2 (when W is defined) + P(C2 + D2 + E2 + extra), P X_iajb = X_iajb + X_jbia, as [i, a, j, b].
torch::Tensor doubles_common(Contractor& c, const DoublesInputs& in);

}  // namespace nnvmc::ccsd
