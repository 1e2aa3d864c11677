/// @file basis.cpp
/// Basis lookup and placement on atoms.
#include "scf/basis.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <utility>

#include "core/data_paths.hpp"
#include "core/elements.hpp"
#include "core/errors.hpp"
#include "parallel/communicator.hpp"
#include "scf/basis_file.hpp"

namespace nnvmc::scf {
namespace fs = std::filesystem;

BasisSet::BasisSet(std::string name, std::vector<libint2::Shell> shells,
                   std::vector<int> shell_atoms)
    : name_(std::move(name)), shells_(std::move(shells)), shell_atoms_(std::move(shell_atoms)) {
  if (shell_atoms_.size() != shells_.size())
    throw InputError("BasisSet: one atom index per shell is required");
  for (const auto& s : shells_) {
    n_functions_ += s.size();
    offsets_.push_back(n_functions_);
    max_l_ = std::max(max_l_, s.contr.front().l);
    max_nprim_ = std::max(max_nprim_, s.nprim());
  }
}

std::string default_basis_dir() {
  return basis_data_dir();
}

std::string basis_file_name(const std::string& basis_name) {
  std::string lower;  // (without blanks: "6-31G(d, p)")
  for (unsigned char c : basis_name)
    if (!std::isspace(c)) lower += static_cast<char>(std::tolower(c));
  // Polarization written in parentheses, as Gaussian and most papers do: 6-31G(d,p) is 6-31G**
  // (but not in a name that has stars already: 6-31G*(d) is no basis, not 6-31G**).
  for (const auto& [long_form, stars] : {std::pair{"(d,p)", "**"}, std::pair{"(d)", "*"}})
    if (const auto at = lower.find(long_form);
        at != std::string::npos && at + std::strlen(long_form) == lower.size() && lower.find('*') == std::string::npos)
      lower.replace(at, std::strlen(long_form), stars);
  std::string file;
  for (char c : lower) file += c == '*' ? 's' : c == '+' ? 'p' : c;
  return file + ".nw";
}

bool is_basis_path(const std::string& basis_name) {
  const auto n = basis_name.size();
  std::string tail = n >= 3 ? basis_name.substr(n - 3) : "";
  std::transform(tail.begin(), tail.end(), tail.begin(), [](unsigned char c) { return std::tolower(c); });
  return basis_name.find('/') != std::string::npos || tail == ".nw";
}

namespace {

/// The name a Basis Set Exchange export gives in its header ("#   Basis set: 6-31G*"), or
/// the file's stem when its first lines name none.
std::string basis_display_name(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  const std::string tag = "Basis set:";
  for (int i = 0; i < 12 && std::getline(in, line); ++i)
    if (const auto at = line.find(tag); line.rfind('#', 0) == 0 && at != std::string::npos) {
      std::istringstream rest(line.substr(at + tag.size()));
      std::string name;
      // Only a name that leads back to this file (a header edited by hand may not).
      if (rest >> name && basis_file_name(name) == file.filename().string()) return name;
    }
  return file.stem().string();
}

}  // namespace

std::vector<std::string> available_bases(const std::string& directory) {
  std::vector<std::pair<std::string, std::string>> files;  // (file stem, name to show)
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(directory, ec))
    // (a file whose stem no name leads to, such as "My+Basis.nw", is read by its path only)
    if (e.path().extension() == ".nw" && basis_file_name(e.path().stem().string()) == e.path().filename().string())
      files.emplace_back(e.path().stem().string(), basis_display_name(e.path()));
  std::sort(files.begin(), files.end());
  std::vector<std::string> names;
  for (auto& f : files) names.push_back(std::move(f.second));
  return names;
}

std::string available_bases_list(const std::string& directory) {
  std::string list;
  for (const auto& n : available_bases(directory)) list += (list.empty() ? "" : ", ") + n;
  return list.empty() ? "none" : list;
}

namespace {

/// Parsed basis files, cached by path (reading cc-pVTZ once per process is enough).
const BasisLibrary& cached_library(const std::string& path, int max_l) {
  static std::mutex mutex;
  static std::map<std::pair<std::string, int>, BasisLibrary> cache;
  std::lock_guard lock(mutex);
  auto it = cache.find({path, max_l});
  if (it == cache.end()) it = cache.emplace(std::pair{path, max_l}, read_nwchem_basis(path, max_l)).first;
  return it->second;
}

}  // namespace

std::string basis_file_path(const std::string& basis_name, const BasisOptions& options) {
  const std::string dir = options.directory.empty() ? default_basis_dir() : options.directory;
  const bool is_file = is_basis_path(basis_name);
  const fs::path path = is_file ? fs::path(basis_name) : fs::path(dir) / basis_file_name(basis_name);
  if (is_file && !fs::is_regular_file(path))
    throw InputError("basis file '" + basis_name + "' " +
                     (fs::exists(path) ? "is not a regular file (a directory or device?)" : "not found"));
  if (!fs::exists(path)) {
    throw InputError("unknown basis '" + basis_name + "' (no file " + path.string() +
                     "; available: " + available_bases_list(dir) + ")");
  }
  return path.string();
}

std::string basis_file_lines(const std::string& basis_name, const BasisOptions& options) {
  const std::string path = basis_file_path(basis_name, options);
  std::ifstream in(path);
  std::string out, line;
  // (named as given: nodes may hold the same file at other paths)
  for (int n = 1; std::getline(in, line); ++n)
    out += "basis file " + basis_name + " line " + std::to_string(n) + ": " + line + "\n";
  return out;
}

void require_same_molecule_and_basis_on_all_ranks(const System& system, const std::string& basis_name) {
  parallel::Communicator& world = parallel::world();
  if (world.size() == 1) return;
  const std::string difference =
      parallel::first_difference_across_ranks(world, system.exact_description() + basis_file_lines(basis_name));
  if (!difference.empty())
    throw InputError("the ranks were given different molecules or basis files: " + difference +
                     " (every rank must read the same molecule and basis files)");
}

BasisSet make_basis(const std::string& basis_name, const System& system,
                    const BasisOptions& options) {
  const BasisLibrary& lib = cached_library(basis_file_path(basis_name, options), options.max_l);
  const bool pure = options.spherical.value_or(lib.spherical);

  std::vector<libint2::Shell> shells;
  std::vector<int> atoms;
  for (std::size_t a = 0; a < system.atoms.size(); ++a) {
    const Atom& atom = system.atoms[a];
    const auto it = lib.elements.find(atom.Z);
    if (it == lib.elements.end())
      throw InputError("basis '" + basis_name + "' has no functions for element " +
                       element_symbol(atom.Z) + " (atom " + std::to_string(a) + " of " +
                       (system.name.empty() ? "the molecule" : system.name) + ")");
    for (const ShellTemplate& t : it->second) {
      libint2::svector<double> alpha(t.exponents.begin(), t.exponents.end());
      libint2::svector<double> coeff(t.coefficients.begin(), t.coefficients.end());
      // s and p shells are the same either way; libint2 treats l ≤ 1 "pure" as Cartesian-ordered.
      shells.emplace_back(std::move(alpha),
                          libint2::svector<libint2::Shell::Contraction>{{t.l, pure && t.l >= 2, coeff}},
                          atom.position);
      atoms.push_back(static_cast<int>(a));
    }
  }
  return BasisSet(basis_name, std::move(shells), std::move(atoms));
}

}  // namespace nnvmc::scf
