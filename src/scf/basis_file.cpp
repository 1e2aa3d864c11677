/// @file basis_file.cpp
/// NWChem basis format reader.
#include "scf/basis_file.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include <libint2/libint2_params.h>  // LIBINT2_MAX_AM_eri: macros only

#include "core/elements.hpp"
#include "core/errors.hpp"
#include "core/log.hpp"

namespace nnvmc::scf {
namespace {

std::string upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::toupper(c); });
  return s;
}

std::vector<std::string> split_words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

/// Shell labels by angular momentum.
constexpr const char* kShellLetters = "SPDFGHIK";
static_assert(kOrbitalMaxL == LIBINT2_MAX_AM_eri, "libint2's four-centre ERI limit");
static_assert(kFittingMaxL <= LIBINT2_MAX_AM_3eri && kFittingMaxL < 8, "libint2's three-centre ERI limit; labels to K");

/// Angular momentum of a shell label letter ("S", "P", ...); -1 if not one.
int l_of_label(const std::string& label) {
  if (label.size() != 1) return -1;
  const auto pos = std::string(kShellLetters).find(label[0]);
  return pos == std::string::npos ? -1 : static_cast<int>(pos);
}

/// Parses a finite number written in Fortran or C style (1.0D+01 or 1.0E+01); nan and inf are not.
bool parse_number(std::string w, double& value) {
  std::replace(w.begin(), w.end(), 'D', 'E');
  std::replace(w.begin(), w.end(), 'd', 'e');
  try {
    std::size_t used = 0;
    value = std::stod(w, &used);
    return used == w.size() && std::isfinite(value);
  } catch (const std::exception&) {
    return false;
  }
}

/// Whether a line starting with `w` is a shell header ("<Symbol> <label>"): `w` starts with a
/// letter and is not a number (nan and inf read as numbers, so their lines are primitive lines
/// and are refused there as not finite).
bool is_header_word(const std::string& w) {
  if (w.empty() || !std::isalpha(static_cast<unsigned char>(w[0]))) return false;
  char* end = nullptr;
  std::strtod(w.c_str(), &end);
  return end != w.c_str() + w.size();
}

/// A shell block being read: element, labels per column, primitive rows.
struct Block {
  int Z = 0;
  std::vector<int> column_l;                 // l of each coefficient column
  std::vector<std::vector<double>> rows;     // exponent, c_1, ..., c_n
  int first_line = 0;
};

void flush(Block& b, BasisLibrary& lib, const std::string& where) {
  if (b.Z == 0) return;
  if (b.rows.empty())
    throw InputError(where + ":" + std::to_string(b.first_line) + ": shell without primitives");
  // One column per contraction: an SP block has exactly two columns (s, p); otherwise all
  // columns share the block's l.
  const std::size_t n_cols = b.rows.front().size() - 1;
  for (std::size_t c = 0; c < n_cols; ++c) {
    ShellTemplate sh;
    sh.l = b.column_l.size() == 2 ? b.column_l[c] : b.column_l.front();
    for (const auto& row : b.rows) {
      if (row[1 + c] == 0.0) continue;
      sh.exponents.push_back(row[0]);
      sh.coefficients.push_back(row[1 + c]);
    }
    // a contraction of zeros is no function at all: a typo, not something to drop silently
    if (sh.exponents.empty())
      throw InputError(where + ":" + std::to_string(b.first_line) + ": contraction " + std::to_string(c + 1) +
                       " of the shell has only zero coefficients");
    lib.elements[b.Z].push_back(std::move(sh));
  }
  b = Block{};
}

}  // namespace

BasisLibrary parse_nwchem_basis(const std::string& text, const std::string& where, int max_l) {
  if (max_l < 0 || max_l > kFittingMaxL) throw Error("parse_nwchem_basis: max_l " + std::to_string(max_l) + " out of range");
  BasisLibrary lib;
  lib.source = where;
  std::istringstream in(text);
  Block block;
  bool in_basis = false, kind_given = false;
  lib.spherical = false;  // NWChem's default, for a file whose BASIS line says neither
  int line_no = 0;
  // each element's shells are one run of blocks; an element that comes back after another's (or
  // in a second BASIS section) would add its shells twice — a concatenation of two basis sets
  std::map<int, int> first_line_of;  // Z -> line of its first shell
  int current_Z = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (const auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    const auto words = split_words(line);
    if (words.empty()) continue;
    const std::string head = upper(words.front());
    const std::string here = where + ":" + std::to_string(line_no) + ": ";
    if (head == "BASIS") {
      in_basis = true;
      current_Z = 0;
      for (const auto& w : words) {
        const std::string kind = upper(w);
        if (kind != "CARTESIAN" && kind != "SPHERICAL") continue;
        lib.spherical = kind == "SPHERICAL";
        kind_given = true;
      }
      continue;
    }
    if (head == "END") {
      flush(block, lib, where);
      in_basis = false;
      continue;
    }
    if (!in_basis) throw InputError(here + "expected a BASIS line, got '" + words.front() + "'");
    double value = 0;
    if (is_header_word(words.front())) {
      // A new shell header: "<Symbol> <label>".
      flush(block, lib, where);
      if (words.size() != 2) throw InputError(here + "expected '<element> <shell type>'");
      try {
        block.Z = atomic_number(words[0]);
      } catch (const InputError& e) {
        throw InputError(here + e.what());
      }
      if (block.Z != current_Z) {
        if (const auto seen = first_line_of.find(block.Z); seen != first_line_of.end())
          throw InputError(here + words[0] + " has shells from line " + std::to_string(seen->second) + " already, " +
                           (current_Z == 0 ? "in an earlier BASIS section" : "before another element's") +
                           " (two basis sets in one file? each element's shells must be one run of blocks)");
        first_line_of[block.Z] = line_no;
        current_Z = block.Z;
      }
      block.first_line = line_no;
      const std::string label = upper(words[1]);
      if (label == "SP" || label == "L") {
        block.column_l = {0, 1};
      } else if (const int l = l_of_label(label); l >= 0) {
        if (l > max_l)
          throw InputError(here + "shell type '" + words[1] + "' (l = " + std::to_string(l) +
                           ") is beyond the integral library's limit, l = " + std::to_string(max_l) + " (" +
                           kShellLetters[max_l] + ")");
        block.column_l = {l};
      } else {
        throw InputError(here + "unknown shell type '" + words[1] + "'");
      }
      continue;
    }
    if (block.Z == 0) throw InputError(here + "primitive line before any shell header");
    std::vector<double> row;
    for (const auto& w : words) {
      if (!parse_number(w, value)) throw InputError(here + "not a finite number: '" + w + "'");
      row.push_back(value);
    }
    const std::size_t want = block.column_l.size() == 2 ? 3 : 0;
    if (row.size() < 2 || (want && row.size() != want) ||
        (!block.rows.empty() && row.size() != block.rows.front().size()))
      throw InputError(here + "wrong number of columns in primitive line");
    if (row[0] <= 0) throw InputError(here + "exponent must be positive");
    // (1e300 or 1e-300 parsed and made the SCF fail with a non-finite Fock matrix, naming no line;
    // tabulated exponents lie far inside these bounds, from ~1e-3 diffuse to ~1e8 core)
    if (row[0] < 1e-8 || row[0] > 1e12)
      throw InputError(here + "exponent " + words[0] + " is outside 1e-8 .. 1e12 (no basis set has such a Gaussian)");
    block.rows.push_back(std::move(row));
  }
  flush(block, lib, where);
  if (lib.elements.empty()) throw InputError(where + ": no basis functions found");
  // (a user audit: such a file was read as pure d, 24 functions for H2O/cc-pVDZ where NWChem and
  // Psi4 with puream false take 25, an energy 0.34 mEh off with no word)
  bool has_d = false;
  for (const auto& [z, shells] : lib.elements)
    for (const auto& sh : shells) has_d = has_d || sh.l >= 2;
  if (!kind_given && has_d)
    log::warn(where + ": its BASIS line says neither SPHERICAL nor CARTESIAN: d and higher shells are read as "
              "Cartesian, NWChem's default (6 d functions); add SPHERICAL to it for pure ones (5)");
  return lib;
}

BasisLibrary read_nwchem_basis(const std::string& path, int max_l) {
  std::ifstream f(path);
  if (!f) throw InputError(path + ": cannot read basis file");
  std::ostringstream text;
  text << f.rdbuf();
  return parse_nwchem_basis(text.str(), path, max_l);
}

}  // namespace nnvmc::scf
