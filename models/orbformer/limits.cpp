/// The molecules an Orbformer can describe.
#include "models/orbformer/limits.hpp"

#include <string>

#include "core/elements.hpp"
#include "core/errors.hpp"

namespace nnvmc {

void check_orbformer_molecule(int max_z, const std::vector<int>& atomic_numbers, int n_electrons) {
  int total = 0;
  for (int z : atomic_numbers) {
    if (z < 1 || z > max_z)
      throw InputError("orbformer supports elements H-" + element_symbol(max_z) +
                       " (model.orbformer.elements); the molecule contains " +
                       (z >= 1 && z <= kMaxAtomicNumber ? element_symbol(z) + " (Z = " + std::to_string(z) + ")" : "Z = " + std::to_string(z)) +
                       ": give model.orbformer.elements up to it for a new model");
    total += z;
  }
  if (n_electrons < 1 || n_electrons > total)
    throw InputError("orbformer needs 1 <= electrons <= sum of Z (its orbitals are the atoms' slots); "
                     "the molecule has " +
                     std::to_string(n_electrons) + " electrons and sum Z = " + std::to_string(total) +
                     ": an anion (a negative system.charge, or charge: in its entry) needs another model.type");
}

}  // namespace nnvmc
