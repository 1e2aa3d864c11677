#pragma once
/// @file gaussian_orbitals.hpp
/// Molecular orbitals built from contracted Gaussians, evaluated on electron positions as a
/// building block (`Blocks<T>::gaussian_orbitals`): plain differentiable tensor ops for the
/// autograd path, value + gradient + Laplacian in closed form for the forward Laplacian.
/// Optionally with the nuclear cusp correction of Ma, Towler, Drummond and Needs
/// (J. Chem. Phys. 122, 224322 (2005)) as used by PauliNet: inside a sphere of radius r_c
/// around nucleus m, the s part of orbital o centred on m, s_mo(ρ), is replaced by
/// C_mo + sign_mo·exp(a0 + a1 ρ + a2 ρ² + a3 ρ³ + a4 ρ⁴), which matches s_mo in value, slope and
/// curvature at r_c and whose slope at ρ = 0 obeys Kato's cusp condition for the whole orbital:
/// ∂φ/∂ρ|₀ = −Z_m φ(R_m) (spherical average).
///
/// Geometry is system data: the table holds no centres; the nuclei are passed at evaluation.
/// Torch only (no libint2): scf_torch builds a table from an scf::BasisSet
/// (scf/basis_table.hpp).
#include <torch/torch.h>

#include <vector>

namespace nnvmc {

/// A contracted Gaussian basis without its centres. Functions are evaluated group by group
/// (shells of equal l and kind); `ao_order` maps that order to the basis set's function order.
struct GaussianBasisTable {
  /// Shells of one (l, pure) kind.
  struct Group {
    int l = 0;
    bool pure = false;
    torch::Tensor atoms;    ///< [S_g] nucleus index of each shell (int64)
    torch::Tensor shells;   ///< [S_g] shell index (column of `contraction`, int64)
    torch::Tensor powers;   ///< [3, n_cart] Cartesian exponents (a, b, c) per component (int64)
    torch::Tensor to_pure;  ///< [n_cart, 2l+1] Cartesian → solid harmonic (pure only)
  };
  int64_t n_atoms = 0;        ///< M, nuclei the shells sit on
  int64_t n_basis = 0;        ///< basis functions
  int max_l = 0;              ///< highest angular momentum
  torch::Tensor prim_exp;     ///< [P] primitive exponents α_k
  torch::Tensor prim_atom;    ///< [P] nucleus of each primitive (int64)
  torch::Tensor contraction;  ///< [P, S] normalised coefficient of primitive k in shell s
  std::vector<Group> groups;
  torch::Tensor ao_order;     ///< [n_basis] basis-set index of each function in group order (int64)
  torch::Tensor s_shells;     ///< [S_s] shells with l = 0 (int64)
  torch::Tensor s_functions;  ///< [S_s] basis-set index of the function of each s shell (int64)

  /// The same table with floating tensors in options' dtype and every tensor on its device.
  GaussianBasisTable to(torch::TensorOptions options) const;
};

/// Nuclear cusp correction of O orbitals for one geometry (see fit_orbital_cusps).
/// `radius` undefined means no correction.
struct OrbitalCusps {
  torch::Tensor radius;          ///< [M] correction radius r_c per nucleus (bohr)
  torch::Tensor active;          ///< [M, O] 1 where orbital o has an s part on nucleus m, else 0
  torch::Tensor offset;          ///< [M, O] C_mo
  torch::Tensor sign;            ///< [M, O] ±1
  torch::Tensor poly;            ///< [M, O, 5] a0 … a4
  torch::Tensor s_coefficients;  ///< [M, P, O] the s part of orbital o on nucleus m per primitive
};

/// Everything `Blocks<T>::gaussian_orbitals` evaluates: φ_o(r) = Σ_p C_po χ_p(r) (+ cusps).
struct GaussianOrbitalSpec {
  const GaussianBasisTable* basis = nullptr;  ///< the basis (not owned)
  torch::Tensor coefficients;                 ///< [n_basis, O] basis-set order
  torch::Tensor nuclei;                       ///< [M, 3] centres of the basis (bohr)
  OrbitalCusps cusps;                         ///< fitted cusp correction, or none
};

/// The uncorrected orbitals at arbitrary points, in plain differentiable ops.
/// @param points [..., 3] @return [..., O]
torch::Tensor gaussian_orbital_values(const GaussianBasisTable& basis, const torch::Tensor& coefficients,
                                      const torch::Tensor& nuclei, const torch::Tensor& points);

/// Fits the cusp correction of the orbitals `coefficients` at the geometry `nuclei`, in plain
/// (differentiable) tensor ops. Radii r_c,m = rc_scaling / Z_m, shrunk where two spheres would
/// overlap. Orbitals whose s part on m is below 1e-6 at the nucleus are left uncorrected there.
/// @param charges [M] @param shifts [M, O] relative change Δ of each s part's value at its nucleus
/// (trainable in PauliNet; undefined = 0)
OrbitalCusps fit_orbital_cusps(const GaussianBasisTable& basis, const torch::Tensor& coefficients,
                               const torch::Tensor& nuclei, const torch::Tensor& charges,
                               const torch::Tensor& shifts, double rc_scaling);

/// Starting shifts for fit_orbital_cusps: per nucleus and orbital, the relative change Δ of the
/// s part's value at the nucleus (from a grid over [−0.5, 2]) whose corrected orbital has the
/// flattest one-electron local energy −½∇²φ/φ − Z/ρ over 0 < ρ < r_c (the largest deviation
/// from its value at r_c), as Ma et al. choose φ(0) by a local-energy criterion. Δ = 0 keeps a
/// Gaussian's value at the nucleus, which a small basis underestimates (LiH/STO-3G: the
/// determinant then lies ~80 mEh above E_HF). Inactive entries get 0. No gradient.
/// @param coefficients [n_basis, O] @param nuclei [M, 3] (bohr) @param charges [M]
/// @return [M, O] in coefficients' dtype and device
torch::Tensor initial_cusp_shifts(const GaussianBasisTable& basis, const torch::Tensor& coefficients,
                                  const torch::Tensor& nuclei, const torch::Tensor& charges, double rc_scaling);

/// The autograd implementation of Blocks<torch::Tensor>::gaussian_orbitals.
/// @param r [B, E, 3] @return [B, E, O]
torch::Tensor gaussian_orbitals_tensor(const torch::Tensor& r, const GaussianOrbitalSpec& spec);

}  // namespace nnvmc
