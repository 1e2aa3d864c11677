#include "core/elements.hpp"

#include <algorithm>
#include <array>
#include <cctype>

#include "core/errors.hpp"

namespace nnvmc {
namespace {
const std::array<std::string, kMaxAtomicNumber> kSymbols = {
    "H",  "He", "Li", "Be", "B",  "C",  "N",  "O",  "F",  "Ne", "Na", "Mg",
    "Al", "Si", "P",  "S",  "Cl", "Ar", "K",  "Ca", "Sc", "Ti", "V",  "Cr",
    "Mn", "Fe", "Co", "Ni", "Cu", "Zn", "Ga", "Ge", "As", "Se", "Br", "Kr"};

const std::array<double, kMaxAtomicNumber> kCovalentRadii = {
    0.31, 0.28, 1.28, 0.96, 0.84, 0.76, 0.71, 0.66, 0.57, 0.58, 1.66, 1.41,
    1.21, 1.11, 1.07, 1.05, 1.02, 1.06, 2.03, 1.76, 1.70, 1.60, 1.53, 1.39,
    1.39, 1.32, 1.26, 1.24, 1.32, 1.22, 1.22, 1.20, 1.19, 1.20, 1.20, 1.16};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}
}  // namespace

int atomic_number(const std::string& symbol) {
  // An atomic number is accepted too (many XYZ writers emit "8" for O).
  if (!symbol.empty() && symbol.size() <= 3 && symbol.find_first_not_of("0123456789") == std::string::npos) {
    const int z = std::stoi(symbol);
    if (z < 1 || z > kMaxAtomicNumber)
      throw InputError("unknown element '" + symbol + "' (atomic numbers 1..36, H..Kr)");
    return z;
  }
  const std::string key = lower(symbol);
  for (int z = 0; z < kMaxAtomicNumber; ++z)
    if (lower(kSymbols[z]) == key) return z + 1;
  throw InputError("unknown element '" + symbol + "' (known: H..Kr)");
}

const std::string& element_symbol(int Z) {
  if (Z < 1 || Z > kMaxAtomicNumber)
    throw InputError("atomic number " + std::to_string(Z) + " outside 1.." +
                     std::to_string(kMaxAtomicNumber));
  return kSymbols[Z - 1];
}

double covalent_radius_angstrom(int Z) {
  if (Z < 1 || Z > kMaxAtomicNumber) (void)element_symbol(Z);  // throws, naming Z
  return kCovalentRadii[static_cast<std::size_t>(Z - 1)];
}

}  // namespace nnvmc
