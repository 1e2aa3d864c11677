#pragma once
/// @file density_fitting.hpp
/// Density fitting (resolution of the identity) of the AO ERIs with an auxiliary basis:
/// (pq|rs) ≈ Σ_PQ (pq|P) [V⁻¹]_PQ (Q|rs), V_PQ = (P|Q) the Coulomb metric of the auxiliary
/// functions. Written as Σ_x B(pq, x) B(rs, x) with B = (pq|P) L⁻ᵀ, V = L Lᵀ (or, for a nearly
/// singular metric, B = (pq|P) V^{-1/2} on its kept eigenvectors), the same three-index
/// form as the pivoted Cholesky vectors (scf/cholesky_eri.hpp), so the SCF's J/K build takes
/// either. Cost: n²·n_aux three-centre integrals once, and J/K GEMMs over n²·n_aux values per
/// build (Psi4's default, scf_type df, is this with its own auxiliary basis).
#include <Eigen/Dense>

#include <string>

#include "core/system.hpp"
#include "scf/basis.hpp"
#include "scf/integrals.hpp"

namespace nnvmc::scf {

/// The auxiliary basis used when none is named: def2-universal-JKFIT (Weigend 2008; H–Kr
/// shipped), fitted for Coulomb and exchange and meant for any orbital basis. Psi4 calls the same
/// functions def2-qzvpp-jkfit (its default for cc-pVXZ orbital bases is cc-pVXZ-JKFIT instead).
inline const std::string kDefaultFittingBasis = "def2-universal-jkfit";

/// Folder of the shipped auxiliary (fitting) basis files: default_basis_dir()/fitting.
std::string fitting_basis_dir();

/// Builds the auxiliary basis `name` (a shipped fitting basis, or an NWChem file path) on the
/// atoms of `system`. @throws InputError as make_basis (unknown basis, element it lacks), saying
/// it is the auxiliary basis
BasisSet make_fitting_basis(const std::string& name, const System& system);

/// A metric whose Cholesky pivot falls below kMinFittingPivot of its largest diagonal (a nearly
/// dependent auxiliary basis) is fitted through V^{-1/2} instead, with the eigenvector directions
/// below kFittingCondition of the largest eigenvalue dropped (Psi4's fitting condition, 1e-10).
/// (A pivot only bounds the lowest eigenvalue from above: a metric may pass the pivot test with
/// an eigenvalue ratio below 1e-10 and be solved by Cholesky with nothing dropped, which is
/// exact arithmetic's fit, only less well conditioned.)
constexpr double kMinFittingPivot = 1e-8;
constexpr double kFittingCondition = 1e-10;

/// B over the unique orbital-function pairs p ≥ q (row p(p+1)/2 + q, as cholesky_eri_pairs):
/// (pq|rs) ≈ Σ_x B(row(p,q), x) B(row(r,s), x).
/// @param basis the orbital basis (n functions)
/// @param aux the auxiliary basis on the same atoms (n_aux functions)
/// @return B [n(n+1)/2, n_kept], n_kept ≤ n_aux the metric's eigenvectors kept (kFittingCondition)
Eigen::MatrixXd density_fitted_pairs(const BasisSet& basis, const BasisSet& aux, const IntegralOptions& options = {});

/// The shells of `aux` on atom `atom` alone, as a basis on that atom (for one atom's SCF, e.g.
/// the SAD guess), with atom index 0.
BasisSet atom_subset(const BasisSet& aux, int atom);

}  // namespace nnvmc::scf
