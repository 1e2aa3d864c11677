#pragma once
/// @file mo_integrals.hpp
/// Molecular-orbital integrals of an RHF reference for CCSD: either the full MO ERI
/// tensor (conventional, small systems) or MO Cholesky vectors (large systems).
#include <torch/types.h>

#include <cstdint>
#include <vector>

#include "scf/basis.hpp"
#include "scf/scf.hpp"

namespace nnvmc::ccsd {

/// Orbital spaces: [0, n_frozen) frozen core, [n_frozen, n_occ) active occupied,
/// [n_occ, n_mo) virtual (all virtuals are active).
struct OrbitalSpace {
  int n_mo = 0;      ///< molecular orbitals
  int n_occ = 0;     ///< doubly occupied orbitals (frozen + active)
  int n_frozen = 0;  ///< frozen core orbitals
  int n_act_occ() const { return n_occ - n_frozen; }  ///< active occupied o
  int n_vir() const { return n_mo - n_occ; }          ///< virtuals v
};

/// MO integrals; exactly one of `eri` and `chol` is defined.
struct MoIntegrals {
  OrbitalSpace space;     ///< orbital partitioning
  torch::Tensor h;        ///< core Hamiltonian [n_mo, n_mo]
  torch::Tensor eps;      ///< orbital energies [n_mo]
  torch::Tensor eri;      ///< (pq|rs) [n_mo, n_mo, n_mo, n_mo] (conventional) or undefined
  torch::Tensor chol;     ///< L[x, p, q] with (pq|rs) ≈ Σ_x L[x,p,q] L[x,r,s], or undefined
  double e_hf = 0;        ///< RHF total energy (with e_nuc)
  double e_nuc = 0;       ///< nuclear repulsion
  bool cholesky() const { return chol.defined(); }  ///< Cholesky-factorised integrals
  /// Bytes of h, eps and eri or chol.
  std::int64_t bytes() const;
  /// The same integrals with every tensor on `device` (the tensors themselves when already there).
  MoIntegrals to(const torch::Device& device) const;
};

/// Number of core orbitals frozen by convention (He–Ne: 1, Na–Ar: 5, K–Kr: 9 per atom).
int frozen_core_orbitals(const System& system);

/// Conventional MO integrals from the full AO ERI tensor (n_basis ≤ ~150). Its peak memory is
/// about three times the AO tensor's 8·n⁴ bytes (conventional_integrals_peak_bytes).
MoIntegrals conventional_integrals(const scf::ScfResult& rhf, const scf::BasisSet& basis, int n_frozen,
                                  const scf::IntegralOptions& integrals = {});

/// The MO integrals (PQ|RS) = Σ C_pP C_qQ C_rR C_sS (pq|rs) of the AO integrals `ao` (n⁴ doubles,
/// chemists' order, row-major [p,q,r,s]; released before the last quarter-transformation) with
/// orbitals `c` [n, m]: a [m, m, m, m] float64 tensor. Holds the AO and one n·m³ tensor, then that
/// and the result: at most 2·8·n⁴ bytes besides n³-sized temporaries.
torch::Tensor transform_ao_eri(std::vector<double>&& ao, const torch::Tensor& c);

/// Peak bytes of a conventional-integrals CCSD with `n_basis` functions over what the process
/// held before it. With cached blocks (`cached`, the default): the AO integrals and one
/// transformed copy are two AO tensors, and the process was measured to peak at 2.7–3.0 of them
/// above its SCF (N2/aug-cc-pVTZ, 92 functions: 1.56 GB over 0.57 GB; H2O/cc-pVQZ, 115: 4.15 GB
/// over 1.40 GB), so three are counted (two let a run pass the check and run out of memory after
/// the SCF). Without (--no-cached-integrals) each iteration dresses the ~n⁴ vvvv block beside
/// the MO integrals: measured 4.1 (N2/cc-pVTZ, 60) and 4.4 (N2/cc-pVQZ, 110) above the SCF, so
/// five are counted.
constexpr double conventional_integrals_peak_bytes(std::int64_t n_basis, bool cached = true) {
  const double n = static_cast<double>(n_basis);
  return (cached ? 3 : 5) * 8 * n * n * n * n;
}

/// Cholesky MO integrals: pivoted Cholesky of the AO ERIs with threshold `tau`
/// (see cholesky.hpp), transformed to MO vectors L[x, p, q].
MoIntegrals cholesky_integrals(const scf::ScfResult& rhf, const scf::BasisSet& basis, int n_frozen,
                               double tau, const scf::IntegralOptions& integrals = {});

/// Cholesky MO integrals from given AO vectors L [n_vec, n, n] (cholesky_ao_eri, or
/// expand_pairs of the vectors the SCF used).
MoIntegrals cholesky_integrals(const scf::ScfResult& rhf, int n_frozen, const torch::Tensor& ao_vectors);

/// Wraps given MO quantities (tests, other SCF codes): h [n,n], eps [n], eri [n,n,n,n].
MoIntegrals integrals_from_tensors(torch::Tensor h, torch::Tensor eps, torch::Tensor eri, int n_occ,
                                   int n_frozen, double e_hf, double e_nuc);

}  // namespace nnvmc::ccsd
