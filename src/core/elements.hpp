#pragma once
/// @file elements.hpp
/// Periodic table lookups (H–Kr).
#include <string>

namespace nnvmc {

/// Atomic number of an element symbol (case-insensitive, e.g. "li", "Li") or of an atomic
/// number written as text ("3").
/// @throws InputError for an unknown symbol.
int atomic_number(const std::string& symbol);

/// Canonical symbol ("Li") of atomic number Z (1..36). @throws InputError otherwise.
const std::string& element_symbol(int Z);

/// Single-bond covalent radius of atomic number Z (1..36) in ångström (Cordero et al., Dalton
/// Trans. 2008, 2832; low-spin values for Mn, Fe, Co, sp3 for C). @throws InputError otherwise.
double covalent_radius_angstrom(int Z);

/// Highest atomic number in the table.
constexpr int kMaxAtomicNumber = 36;

}  // namespace nnvmc
