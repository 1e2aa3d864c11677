#pragma once
/// @file dressed.hpp
/// The T1-similarity-transformed (dressed) Hamiltonian e^{−T1} H e^{T1} of closed-shell
/// CCSD: with T[a,i] = t1[i,a], X = 1 − T and Y = 1 + T,
///   ĥ_pq = Σ X_pp' h_p'q' Y_q'q,   ĝ_pqrs = Σ X_pp' Y_q'q X_rr' Y_s's g_p'q'r's'.
/// Blocks are named by four letters: o = active occupied, v = virtual (e.g. "vvov").
#include <torch/types.h>

#include <map>
#include <string>

#include "ccsd/contractor.hpp"
#include "ccsd/mo_integrals.hpp"

namespace nnvmc::ccsd {

/// Dressed integrals for the current t1 (conventional: full ĝ; Cholesky: dressed vectors).
class DressedHamiltonian {
 public:
  DressedHamiltonian(const MoIntegrals& mo, Contractor& contract);

  /// Dresses with t1 [o, v] (zeros: the bare Hamiltonian).
  void dress(const torch::Tensor& t1);

  /// Dressed Fock matrix F̂_pq = ĥ_pq + Σ_k∈occ (2ĝ_pqkk − ĝ_pkkq), [n_mo, n_mo].
  torch::Tensor fock() const;

  /// Dressed block ĝ in chemists' order, e.g. block("vvov") → [v, v, o, v] (letters o, v;
  /// conventional integrals also O = all occupied and * = all orbitals). Cached until the next
  /// dress() (ovov, which t1 does not change, for good).
  torch::Tensor block(const std::string& spaces) const;

  /// Particle–particle ladder Σ_cd ĝ_acbd t2[i,c,j,d] → [o, v, o, v]; with Cholesky
  /// vectors the planned three-operand contraction "xac,xbd,icjd->iajb".
  torch::Tensor ladder(const torch::Tensor& t2) const;

  /// Singles term A1: Σ_ckd u[k,c,i,d] ĝ_adkc → [o, v]; with Cholesky vectors the
  /// three-operand "kcid,xkc,xad->ia" (never forms the [v, v, o, v] block).
  torch::Tensor singles_a1(const torch::Tensor& u) const;

 private:
  torch::Tensor range(char space, int dim, const torch::Tensor& t) const;
  /// Conventional integrals: the dressed block of `spaces` (o, O = all occupied, v, * = all),
  /// made from the bare ERIs with only the t1 quarters that touch it.
  torch::Tensor dressed_eri_block(const std::string& spaces) const;

  const MoIntegrals& mo_;
  Contractor& c_;
  torch::Tensor h_;     // dressed core Hamiltonian [n, n]
  torch::Tensor t1_;    // singles of the last dress() (conventional)
  torch::Tensor x_, yt_;  // X = 1 − T and Yᵀ = (1 + T)ᵀ of the last dress() [n, n] (conventional)
  mutable std::map<std::string, torch::Tensor> blocks_;  // dressed ERI blocks made since then
  torch::Tensor l_;     // dressed Cholesky vectors [naux, n, n]
};

}  // namespace nnvmc::ccsd
