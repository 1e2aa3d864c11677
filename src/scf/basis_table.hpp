#pragma once
/// @file basis_table.hpp
/// The tensor table of a Gaussian basis (blocks/gaussian_orbitals.hpp) from an scf::BasisSet,
/// for `Blocks<T>::gaussian_orbitals`. The table holds no centres: the basis's atoms are the
/// nuclei passed at evaluation, in the order of the molecule the basis was built on.
#include <torch/torch.h>

#include "blocks/gaussian_orbitals.hpp"
#include "scf/basis.hpp"

namespace nnvmc::scf {

/// Exponents, normalised contraction coefficients, angular parts and function order of `basis`
/// (the same functions, order and normalisation as the integrals and GaussianOrbitals).
GaussianBasisTable basis_table(const BasisSet& basis, torch::TensorOptions options = torch::kFloat64);

}  // namespace nnvmc::scf
