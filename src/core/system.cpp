#include "core/system.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include "core/data_paths.hpp"
#include "core/elements.hpp"
#include "core/errors.hpp"
#include "core/log.hpp"
#include "core/yaml_document.hpp"


namespace nnvmc {
namespace fs = std::filesystem;

int System::n_electrons() const {
  int z = 0;
  for (const auto& a : atoms) z += a.Z;
  return z - charge;
}
int System::n_up() const { return (n_electrons() + spin) / 2; }
int System::n_down() const { return (n_electrons() - spin) / 2; }

double System::energy_lower_bound() const {
  double z = 0;
  for (const auto& a : atoms) z += a.Z;
  // the sum of the lowest `electrons` levels of one spin of a hydrogen-like ion of charge z
  const auto filled = [z](int electrons) {
    double e = 0;
    for (int n = 1; electrons > 0; ++n) {
      const int in_shell = std::min(electrons, n * n);
      e -= in_shell * z * z / (2.0 * n * n);
      electrons -= in_shell;
    }
    return e;
  };
  return filled(n_up()) + filled(n_down()) + nuclear_repulsion();
}

double System::nuclear_repulsion() const {
  double e = 0;
  for (size_t i = 0; i < atoms.size(); ++i)
    for (size_t j = i + 1; j < atoms.size(); ++j) {
      double d2 = 0;
      for (int k = 0; k < 3; ++k) {
        const double d = atoms[i].position[k] - atoms[j].position[k];
        d2 += d * d;
      }
      e += atoms[i].Z * atoms[j].Z / std::sqrt(d2);
    }
  return e;
}

std::string System::electron_summary() const {
  return name + ": " + std::to_string(n_electrons()) + (n_electrons() == 1 ? " electron (" : " electrons (") +
         std::to_string(n_up()) + " up, " +
         std::to_string(n_down()) + " down)";
}

std::string System::exact_description() const {
  std::string text = strfmt("molecule %s: charge %d, spin %d\n", name.c_str(), charge, spin);
  for (const auto& a : atoms)
    text += strfmt("  atom Z=%d at %.17g %.17g %.17g\n", a.Z, a.position[0], a.position[1], a.position[2]);
  return text;
}

std::string System::short_distance_warning() const {
  // Of the covalent radii's sum: the shortest real bonds are at about 0.77 (N≡N, C≡C, C≡O);
  // ångström read as bohr puts every bond at 0.53 of its length, H2's at 0.63.
  constexpr double kShortest = 0.7;
  double worst = kShortest, d = 0;
  std::size_t wi = 0, wj = 0;
  for (std::size_t i = 0; i < atoms.size(); ++i)
    for (std::size_t j = i + 1; j < atoms.size(); ++j) {
      double d2 = 0;
      for (int k = 0; k < 3; ++k) d2 += std::pow(atoms[i].position[k] - atoms[j].position[k], 2);
      const double ratio = std::sqrt(d2) / (kBohrPerAngstrom * (covalent_radius_angstrom(atoms[i].Z) +
                                                                 covalent_radius_angstrom(atoms[j].Z)));
      if (ratio < worst) worst = ratio, d = std::sqrt(d2), wi = i, wj = j;
    }
  if (worst >= kShortest) return "";
  const std::string hint = source_units == "bohr"
                               ? ". If the coordinates are in angstrom, the molecule file must say 'units: angstrom' "
                                 "(YAML molecules are read in bohr)"
                               : " (the coordinates were read in angstrom)";
  return strfmt("%s: atoms %zu (%s) and %zu (%s) are %.4g bohr (%.4g angstrom) apart, %.2f of their covalent radii's "
                "sum: closer than any bond%s",
                name.empty() ? "molecule" : ("molecule '" + name + "'").c_str(), wi,
                element_symbol(atoms[wi].Z).c_str(), wj, element_symbol(atoms[wj].Z).c_str(), d,
                d / kBohrPerAngstrom, worst, hint.c_str());
}

void System::validate() const {
  const std::string who = name.empty() ? "molecule" : "molecule '" + name + "'";
  if (atoms.empty()) throw InputError(who + ": no atoms");
  // Bounds first, so that the electron counts below cannot overflow.
  long long z_sum = 0;
  for (const auto& a : atoms) z_sum += a.Z;
  if (spin < 0) throw InputError(who + ": spin must be >= 0 (electrons are ordered spin-up first)");
  if (static_cast<long long>(charge) < -z_sum)
    throw InputError(who + ": charge " + std::to_string(charge) + " would add more electrons than the nuclei's " +
                     std::to_string(z_sum) + " (at most " + std::to_string(2 * z_sum) + " electrons)");
  if (static_cast<long long>(charge) > z_sum)
    throw InputError(who + ": charge " + std::to_string(charge) + " leaves " +
                     std::to_string(z_sum - static_cast<long long>(charge)) + " electrons");
  const int n = n_electrons();
  if (n <= 0)
    throw InputError(who + ": charge " + std::to_string(charge) + " leaves " + std::to_string(n) +
                     " electrons");
  if (std::abs(spin) > n)
    throw InputError(who + ": spin " + std::to_string(spin) + " exceeds the number of electrons (" +
                     std::to_string(n) + ")");
  if ((n + spin) % 2 != 0)
    throw InputError(who + ": spin " + std::to_string(spin) + " has the wrong parity for " + std::to_string(n) +
                     (n == 1 ? " electron" : " electrons") + " (n_up - n_down must have the parity of n: e.g. spin: " +
                     std::to_string(spin == 0 ? 1 : spin > 0 ? spin - 1 : spin + 1) + ")");
  for (size_t i = 0; i < atoms.size(); ++i)
    for (size_t j = i + 1; j < atoms.size(); ++j) {
      double d2 = 0;
      for (int k = 0; k < 3; ++k) d2 += std::pow(atoms[i].position[k] - atoms[j].position[k], 2);
      if (d2 < 1e-12)
        throw InputError(who + ": atoms " + std::to_string(i) + " and " + std::to_string(j) +
                         " coincide (closer than 1e-6 bohr)");
    }
}

namespace {
std::string mark(const YAML::Node& n, const std::string& where) {
  if (n.Mark().is_null()) return where;
  return where + ":" + std::to_string(n.Mark().line + 1);
}

/// Coordinates must be finite and within kMaxCoordinate bohr of the origin (anything beyond is
/// a unit or typing error, and would swamp the electrons' positions in floating point).
constexpr double kMaxCoordinate = 1e6;
void check_coordinates(const Atom& atom) {
  for (double x : atom.position)
    if (!std::isfinite(x) || std::abs(x) > kMaxCoordinate)
      throw InputError("coordinate " + std::to_string(x) + " is not a finite number within 1e6 bohr");
}

Atom parse_atom(const YAML::Node& a, double scale, const std::string& where) {
  if (!a.IsSequence() || a.size() != 4)
    throw InputError(mark(a, where) + ": an atom is [symbol, x, y, z]");
  Atom atom;
  try {
    atom.Z = atomic_number(a[0].as<std::string>());
    for (int k = 0; k < 3; ++k) atom.position[k] = a[k + 1].as<double>() * scale;
    check_coordinates(atom);
  } catch (const YAML::Exception&) {
    throw InputError(mark(a, where) + ": an atom is [symbol, x, y, z] with numeric coordinates");
  } catch (const InputError& e) {
    throw InputError(mark(a, where) + ": " + e.what());
  }
  return atom;
}
}  // namespace

System parse_molecule_yaml(const std::string& yaml_text, const std::string& where) {
  const YAML::Node root = load_yaml_document(yaml_text, where);
  System sys;
  double scale = 1.0;
  if (root.IsMap()) {
    static const std::vector<std::string> known = {"units", "charge", "spin", "atoms",
                                                   "e_ref", "e_ref_source", "name"};
    for (const auto& kv : root) {
      if (!kv.first.IsScalar()) throw InputError(mark(kv.first, where) + ": molecule keys are plain names");
      const auto key = kv.first.Scalar();
      if (std::find(known.begin(), known.end(), key) == known.end())
        throw InputError(mark(kv.first, where) + ": unknown molecule key '" + key +
                         "' (known: units, charge, spin, atoms, name, e_ref, e_ref_source)");
    }
    try {
      if (root["units"]) {
        scale = bohr_per_unit(root["units"].as<std::string>(), mark(root["units"], where) + ": units");
        sys.source_units = scale == 1.0 ? "bohr" : "angstrom";
      }
      if (root["charge"]) sys.charge = root["charge"].as<int>();
      if (root["spin"]) sys.spin = root["spin"].as<int>();
      if (root["name"]) sys.name = root["name"].as<std::string>();
      if (root["e_ref"] && !root["e_ref"].IsNull()) {
        sys.e_ref = root["e_ref"].as<double>();
        if (!std::isfinite(*sys.e_ref))
          throw InputError(mark(root["e_ref"], where) + ": e_ref must be a finite energy (hartree)");
      }
      if (root["e_ref_source"]) sys.e_ref_source = root["e_ref_source"].as<std::string>();
    } catch (const YAML::Exception& e) {
      throw InputError(where + ":" + std::to_string(e.mark.line + 1) +
                       ": charge and spin must be integers, e_ref a number");
    }
    if (!root["atoms"]) throw InputError(where + ": missing 'atoms'");
  }
  // (one handle, bound once: assigning over a YAML::Node would rewrite the node it refers to)
  const YAML::Node atoms = root.IsMap() ? root["atoms"] : root;
  if (!atoms.IsSequence()) throw InputError(mark(atoms, where) + ": 'atoms' must be a list");
  for (const auto& a : atoms) sys.atoms.push_back(parse_atom(a, scale, where));
  // No `spin:` is the lowest spin, as in an .xyz file (it was 0, and a radical without one was
  // refused for "spin 0", a value the file never gave).
  if (!root.IsMap() || !root["spin"]) {
    sys.spin_given = false;
    sys.spin = std::abs(sys.n_electrons() % 2);
  }
  return sys;
}

double bohr_per_unit(const std::string& units, const std::string& where) {
  std::string u = units;
  for (auto& c : u) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (u == "bohr") return 1.0;
  if (u == "angstrom") return kBohrPerAngstrom;
  throw InputError(where + " must be bohr or angstrom, not '" + units + "'");
}

namespace {
/// A coordinate token read whole ("1,25" or "0.74abc" used to be read as far as they parse); a
/// Fortran exponent (0.74D0) is read as E.
bool parse_coordinate(std::string token, double& x) {
  for (auto& c : token)
    if (c == 'D' || c == 'd') c = 'E';
  if (token.empty() || token.find_first_not_of("0123456789+-.Ee") != std::string::npos) return false;
  char* end = nullptr;
  errno = 0;
  x = std::strtod(token.c_str(), &end);
  return end == token.c_str() + token.size() && errno == 0;
}
}  // namespace

namespace {

/// The frame of an XYZ file whose first line (the atom count) is lines[first] (0-based): the
/// atom count, the comment and the atom lines. @throws InputError naming the line.
System parse_xyz_frame(const std::vector<std::string>& lines, std::size_t first, const std::string& where) {
  const auto at_line = [&](std::size_t k) { return where + ":" + std::to_string(first + k + 1); };
  long long n = 0;
  {
    std::string rest;
    std::istringstream ls(lines[first]);
    if (!(ls >> n) || (ls >> rest) || n <= 0 || n > 100000)
      throw InputError(at_line(0) + ": expected the number of atoms (1 to 100000), got '" + lines[first] + "'");
  }
  System sys;
  for (long long i = 0; i < n; ++i) {
    const std::size_t k = first + 2 + static_cast<std::size_t>(i);
    if (k >= lines.size())
      throw InputError(where + ": line " + std::to_string(first + 1) + " declares " + std::to_string(n) +
                       " atoms, the file has " + std::to_string(i) + (first == 0 ? "" : " after it"));
    std::istringstream ls(lines[k]);
    std::string sym, xyz[3];
    Atom a;
    const std::string at = at_line(k - first);
    if (!(ls >> sym >> xyz[0] >> xyz[1] >> xyz[2])) throw InputError(at + ": expected 'symbol x y z'");
    for (int c = 0; c < 3; ++c)  // (columns after z are allowed: some writers add charges or forces)
      if (!parse_coordinate(xyz[c], a.position[c]))
        throw InputError(at + ": coordinate '" + xyz[c] + "' is not a number (expected 'symbol x y z' in angstrom)");
    try {
      a.Z = atomic_number(sym);
      for (auto& x : a.position) x *= kBohrPerAngstrom;
      check_coordinates(a);
    } catch (const InputError& e) {
      throw InputError(at + ": " + e.what());
    }
    sys.atoms.push_back(a);
  }
  sys.source_units = "angstrom";
  sys.spin_given = false;  // an .xyz says nothing of charge and spin: neutral, lowest spin
  sys.spin = sys.n_electrons() % 2;
  return sys;
}

/// Whether an XYZ line holds an atom count alone (a frame's first line).
bool is_count_line(const std::string& line) {
  std::istringstream ls(line);
  std::string first, extra;
  long long count = 0;
  if (!(ls >> first) || (ls >> extra)) return false;
  std::istringstream cs(first);
  return (cs >> count) && cs.eof();
}

}  // namespace

System parse_xyz(const std::string& file_text, const std::string& where, std::optional<int> frame, int* chosen) {
  // A UTF-8 byte-order mark, which some editors write, is not part of the atom count.
  const bool bom = file_text.rfind("\xEF\xBB\xBF", 0) == 0;
  std::istringstream in(bom ? file_text.substr(3) : file_text);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  if (lines.empty()) throw InputError(where + ":1: expected the number of atoms");
  // Every frame is read and checked (only where each starts is kept). Between frames and after
  // the last only blank lines may follow; another atom line means the declared count is wrong.
  std::vector<std::size_t> starts;
  for (std::size_t first = 0;;) {
    const std::size_t n_atoms = parse_xyz_frame(lines, first, where).atoms.size();
    starts.push_back(first);
    std::size_t k = first + 2 + n_atoms;
    while (k < lines.size() && lines[k].find_first_not_of(" \t\r") == std::string::npos) ++k;
    if (k == lines.size()) break;
    if (!is_count_line(lines[k]))
      throw InputError(where + ":" + std::to_string(k + 1) + ": " +
                       (first == 0 ? std::string("the first line") : "line " + std::to_string(first + 1)) + " declares " +
                       std::to_string(n_atoms) + " atoms, but more atom lines follow");
    first = k;
  }
  const int n = static_cast<int>(starts.size()), wanted = frame.value_or(0);
  const int index = wanted < 0 ? n + wanted : wanted;
  if (index < 0 || index >= n)
    throw InputError(where + ": no frame " + std::to_string(wanted) + " (the file has " + std::to_string(n) +
                     (n == 1 ? " frame: 0" : " frames: 0 to " + std::to_string(n - 1) + ", or -1 for the last") + ")");
  if (n > 1 && !frame)
    log::warn(strfmt("%s: a trajectory of %d frames; the first (frame 0) is used: name another as %s@K (K from 0, "
                     "-1 the last)",
                     where.c_str(), n, where.c_str()));
  if (chosen) *chosen = index;
  return parse_xyz_frame(lines, starts[static_cast<std::size_t>(index)], where);
}

System read_xyz(const std::string& path, std::optional<int> frame, int* index) {
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_xyz(ss.str(), path, frame, index);
}

bool same_geometry(const System& a, const System& b) {
  if (a.atoms.size() != b.atoms.size() || a.n_up() != b.n_up() || a.n_down() != b.n_down()) return false;
  for (size_t i = 0; i < a.atoms.size(); ++i) {
    if (a.atoms[i].Z != b.atoms[i].Z) return false;
    for (int k = 0; k < 3; ++k)
      if (std::abs(a.atoms[i].position[k] - b.atoms[i].position[k]) > 1e-12) return false;
  }
  return true;
}

bool congruent(const System& a, const System& b, double tolerance) {
  if (a.atoms.size() != b.atoms.size() || a.n_up() != b.n_up() || a.n_down() != b.n_down()) return false;
  const auto distance = [](const Atom& p, const Atom& q) {
    double d2 = 0;
    for (int k = 0; k < 3; ++k) d2 += (p.position[k] - q.position[k]) * (p.position[k] - q.position[k]);
    return std::sqrt(d2);
  };
  for (size_t i = 0; i < a.atoms.size(); ++i) {
    if (a.atoms[i].Z != b.atoms[i].Z) return false;
    for (size_t j = 0; j < i; ++j)
      if (std::abs(distance(a.atoms[i], a.atoms[j]) - distance(b.atoms[i], b.atoms[j])) > tolerance) return false;
  }
  return true;
}

std::string default_molecules_dir() {
  return molecules_data_dir();
}

namespace {
/// The molecule names in a directory ("a, b, c"), for an error message.
std::string known_molecule_names(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".yaml") names.push_back(it->path().stem().string());
  std::sort(names.begin(), names.end());
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}
}  // namespace

bool is_xyz_path(const std::string& path) {
  std::string extension = std::filesystem::path(path).extension().string();
  for (auto& c : extension) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return extension == ".xyz";
}

std::pair<std::string, std::optional<int>> split_xyz_frame(const std::string& spec) {
  const auto at = spec.rfind('@');
  if (at == std::string::npos || at < 4) return {spec, std::nullopt};
  const std::string file = spec.substr(0, at);
  if (!is_xyz_path(file)) return {spec, std::nullopt};
  const std::string index = spec.substr(at + 1);
  std::size_t used = 0;
  int frame = 0;
  try {
    frame = std::stoi(index, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (index.empty() || used != index.size())
    throw InputError(spec + ": '@" + index + "' is not a frame number (FILE.xyz@K: K from 0, -1 the last)");
  return {file, frame};
}

std::string molecule_spec_label(const std::string& spec, const System& system, int* frame) {
  if (frame) *frame = -1;
  const auto [path, picked] = split_xyz_frame(spec);
  const auto at = system.name.rfind('@');
  if (!picked || at == std::string::npos) return spec;
  int index = 0;  // (a System named otherwise than load_molecule names a frame: the spec alone)
  const char* first = system.name.data() + at + 1;
  const char* last = system.name.data() + system.name.size();
  if (const auto [end, ec] = std::from_chars(first, last, index); ec != std::errc() || end != last) return spec;
  if (frame) *frame = index;
  return *picked < 0 ? spec + " (frame " + std::to_string(index) + ")" : spec;
}

System load_molecule(const std::string& name_or_path, const std::string& molecules_dir) {
  const auto [spec, frame] = split_xyz_frame(name_or_path);
  fs::path p(spec);
  const bool looks_like_path = spec.find('/') != std::string::npos || p.has_extension();
  if (!looks_like_path) p = fs::path(molecules_dir) / (spec + ".yaml");
  if (fs::exists(p) && !fs::is_regular_file(p))
    throw InputError(p.string() + ": not a molecule file (a directory?)");
  if (!fs::exists(p)) {
    if (looks_like_path) throw InputError(spec + ": no such molecule file");
    throw InputError("unknown molecule '" + spec + "' (no " + p.string() + "; give one of the names there (" +
                     known_molecule_names(molecules_dir) + ") or a .yaml/.xyz path)");
  }
  System sys;
  if (is_xyz_path(p.string())) {
    int index = 0;
    sys = read_xyz(p.string(), frame, &index);
    if (frame) sys.name = p.stem().string() + "@" + std::to_string(index);  // (@-1 of ten frames: @9)
  } else {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    sys = parse_molecule_yaml(ss.str(), p.string());
  }
  if (sys.name.empty()) sys.name = p.stem().string();
  return sys;
}

}  // namespace nnvmc
