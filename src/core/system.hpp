#pragma once
/// @file system.hpp
/// Molecules: nuclei (bohr), charge and spin, and the electron counts they imply.
#include <array>
#include <optional>
#include <string>
#include <vector>

namespace nnvmc {

/// Bohr per ångström (CODATA 2018, as in ../shared/reference/molecules.yaml).
constexpr double kBohrPerAngstrom = 1.8897261254578281;

/// One nucleus.
struct Atom {
  int Z = 1;                                ///< nuclear charge (atomic number)
  std::array<double, 3> position{0, 0, 0};  ///< bohr
};

/// A molecule with its electrons: electrons are ordered spin-up first.
struct System {
  std::string name;         ///< e.g. "lih" (informational)
  /// The name a molecule list gave it before the run's names were made usable and unique
  /// ("traj@3", which the run calls traj_3, or traj_3_2 where an entry was named traj_3);
  /// "" for a molecule not resolved from a list
  std::string given_name;
  /// the list entry gave this name (`name:`): it keeps it over an unnamed entry whose default
  /// name is the same (a user audit: {molecule: h2, name: h2} became h2_2 after an unnamed h2)
  bool name_explicit = false;
  /// the list entry gave `charge:` / `spin:` (system.charge / system.spin replacing one is said)
  bool entry_charge = false, entry_spin = false;
  /// the list entry's `geometry:` is another molecule than its file's (not a rigid motion of it)
  bool entry_geometry = false;
  std::vector<Atom> atoms;  ///< nuclei
  int charge = 0;           ///< total charge; electrons = ΣZ − charge
  int spin = 0;             ///< n_up − n_down
  std::optional<double> e_ref;  ///< best known total energy (hartree) from the molecule file, if any
  std::string e_ref_source;     ///< where e_ref comes from (molecule file's e_ref_source)
  /// false when the source gave no spin (an .xyz file): the lowest, n_electrons mod 2, is used,
  /// also after a charge is set
  bool spin_given = true;
  /// units the source gave its coordinates in ("bohr" or "angstrom"); a `geometry:` for this
  /// molecule without `units:` is read in them
  std::string source_units = "bohr";

  int n_electrons() const;  ///< ΣZ − charge
  int n_up() const;         ///< (n_electrons + spin) / 2
  int n_down() const;       ///< (n_electrons − spin) / 2
  double nuclear_repulsion() const;  ///< Σ_{I<J} Z_I Z_J / |R_I − R_J| (hartree)
  /// A rigorous lower bound on every energy of this molecule's Hamiltonian (hartree): without
  /// the electron repulsion, and with −½∇² − Σ_A Z_A/|r − R_A| = Σ_A w_A (−½∇² − Z/|r − R_A|),
  /// w_A = Z_A/Z, Z = Σ_A Z_A, the one-electron levels sum (Ky Fan) to at least those of one
  /// hydrogen-like ion of charge Z: each spin's electrons fill its shells, n² orbitals at
  /// −Z²/(2n²). Plus the nuclear repulsion. Exact for one electron on one nucleus (H: −0.5);
  /// loose otherwise (H2 −3.29, LiH −19.0), so an energy below it is a broken estimate, not a
  /// good wavefunction (walkers that no longer sample |ψ|²).
  double energy_lower_bound() const;

  /// Checks charge/spin consistency. @throws InputError naming what is wrong.
  void validate() const;
  /// A warning when two nuclei are closer than 0.7 × the sum of their covalent radii (closer
  /// than any bond: an unphysical geometry, or ångström coordinates read as bohr, which puts
  /// bonded atoms at 0.53 × their distance); empty otherwise. Names the closest such pair.
  std::string short_distance_warning() const;
  /// "name: N electrons (u up, d down)", as the commands log a molecule.
  std::string electron_summary() const;
  /// Charge, spin and every nucleus to full precision, one line each (what ranks compare).
  std::string exact_description() const;
};

/// Whether two molecules have the same atoms (Z in order), electron counts and nuclei (to 1e-12 bohr).
bool same_geometry(const System& a, const System& b);

/// Whether two molecules are the same up to a rigid motion (translation, rotation, reflection):
/// the same atoms (Z in order), electron counts, and distances between each pair of nuclei to
/// `tolerance` bohr. Their energies are then the same: a reference energy carries over.
bool congruent(const System& a, const System& b, double tolerance = 1e-6);

/// The scale from `units` ("bohr" or "angstrom", any case) to bohr. @throws InputError naming
/// `where` otherwise.
double bohr_per_unit(const std::string& units, const std::string& where);

/// Loads a molecule: a name of a file in `molecules_dir` (e.g. "lih"), or a path to a
/// .yaml (project format) or .xyz (ångström) file; "FILE.xyz@K" is frame K of a multi-frame XYZ
/// file (from 0, −1 the last; as ASE's command-line tools write it), named "STEM@K" (run outputs
/// and comparisons, whose names are plain, write "STEM_K").
/// @throws InputError.
System load_molecule(const std::string& name_or_path, const std::string& molecules_dir);

/// How a command names the molecule it loaded from `spec` (load_molecule): the spec, and the
/// frame read where the spec picks one by a negative index ("traj.xyz@-1 (frame 9)"); -1 where
/// no frame was picked, else the frame in `frame`.
std::string molecule_spec_label(const std::string& spec, const System& system, int* frame = nullptr);

/// Parses a molecule from YAML text in the project format (mapping with units, charge,
/// spin, atoms) or a bare list of atoms [[symbol, x, y, z], ...] in bohr.
/// `where` prefixes error messages (file name or config key). @throws InputError.
System parse_molecule_yaml(const std::string& yaml_text, const std::string& where);

/// Reads frame `frame` of an XYZ file (ångström; see parse_xyz). @throws InputError.
System read_xyz(const std::string& path, std::optional<int> frame = std::nullopt, int* index = nullptr);

/// Parses frame `frame` (from 0; −1 the last) of XYZ text (ångström). Each frame is an atom count,
/// a comment and `symbol x y z` lines; every frame is checked, and only blank lines may come
/// between and after them. Without `frame`, frame 0 is used, with a warning saying how to pick
/// another when there are several. `where` prefixes errors (with line numbers). `index`, when
/// given, receives the frame read counted from 0 (−1 of ten frames: 9).
/// @throws InputError, also for a frame not there.
System parse_xyz(const std::string& text, const std::string& where, std::optional<int> frame = std::nullopt,
                 int* index = nullptr);

/// "FILE.xyz@K" (any case of .xyz, K an integer) → {"FILE.xyz", K}; anything else → {spec, none}.
/// @throws InputError for "FILE.xyz@" followed by something other than an integer.
std::pair<std::string, std::optional<int>> split_xyz_frame(const std::string& spec);

/// Whether `path` names an xyz file (its extension .xyz, in any case).
bool is_xyz_path(const std::string& path);

/// Directory of the shipped molecule files (configs/molecules of the source tree, or
/// $NNVMC_MOLECULES when set).
std::string default_molecules_dir();

}  // namespace nnvmc
