#pragma once
/// @file limits.hpp
/// The molecules an Orbformer can describe (torch-free: `nnvmc config` checks them too).
#include <vector>

namespace nnvmc {

/// Elements H up to max_z (model.orbformer.elements) and 1 ≤ electrons ≤ Σ Z: its orbitals are
/// the atoms' slots, so an anion has none for its extra electrons.
/// @throws InputError naming model.orbformer.elements or the charge
void check_orbformer_molecule(int max_z, const std::vector<int>& atomic_numbers, int n_electrons);

}  // namespace nnvmc
