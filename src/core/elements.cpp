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

}  // namespace nnvmc
