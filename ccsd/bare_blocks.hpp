#pragma once
/// @file bare_blocks.hpp
/// The t1-independent (bare) MO integral blocks that the cached CCSD iteration keeps for the
/// whole run, in chemists' notation over the active orbitals (o active occupied, v virtual):
/// every T1-dressed block the equations need is then these blocks plus small t1 corrections
/// (residual_cached.cpp), so an iteration never touches the n⁴ ERIs or the Cholesky vectors.
#include <torch/types.h>

#include <cstdint>

#include "ccsd/contractor.hpp"
#include "ccsd/mo_integrals.hpp"

namespace nnvmc::ccsd {

/// Bare blocks; letters name the orbital space of each axis, e.g. ooov[k,i,l,c] = (ki|lc).
struct BareBlocks {
  torch::Tensor ovov;    ///< (kc|ld) [o, v, o, v]
  torch::Tensor L_ovov;  ///< 2(kc|ld) − (kd|lc) [o, v, o, v]
  torch::Tensor ooov;    ///< (ki|lc) [o, o, o, v]
  torch::Tensor oooo;    ///< (ki|lj) [o, o, o, o]
  torch::Tensor oovv;    ///< (ki|ac) [o, o, v, v]
  torch::Tensor ovvv;    ///< (kc|ad) [o, v, v, v]; symmetric in its last two axes
  torch::Tensor fock;    ///< bare Fock matrix h + Σ_k∈occ (2(pq|kk) − (pk|kq)) over the active orbitals [o+v, o+v]

  /// Bytes the blocks occupy for o active occupied and v virtual orbitals (float64).
  static std::int64_t bytes(std::int64_t o, std::int64_t v);
};

/// Builds the blocks from conventional ERIs (slices) or Cholesky vectors (contractions through `c`,
/// term "set-up"). The Fock matrix uses every occupied orbital, frozen ones included.
BareBlocks bare_blocks(const MoIntegrals& mo, Contractor& c);

}  // namespace nnvmc::ccsd
