#pragma once
/// @file molecule_list.hpp
/// The molecules of a run: `system.molecule` (one), `system.molecules` (a list) or
/// `system.dataset` (a YAML file holding such a list). A run is a list of molecules; one
/// molecule is the list of length one. Torch-free.
#include <cstddef>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/system.hpp"

namespace YAML {
class Node;
}

namespace nnvmc {

/// Names a molecule may not take: the run-level series of result.h5's train/, eval/ and
/// pretrain/ groups (a molecule's own series live in train/<name>/, eval/<name>/, pretrain/<name>/).
extern const std::vector<std::string> kReservedMoleculeNames;

/// The molecules of `config` in order, each validated, with charge/spin overrides applied and
/// names made usable and unique (see unique_molecule_names). None of the three keys: lih.
/// Entries of system.molecules (and of a dataset file):
///  - a name in configs/molecules/ or a .yaml/.xyz path (relative to the working directory, or
///    to the dataset file);
///  - a list of atoms [[symbol, x, y, z], ...] (bohr);
///  - a mapping in the molecule-file format ({atoms: [...], units, charge, spin, name});
///  - {molecule: NAME-OR-PATH, geometry: [[x, y, z], ...], units, name, charge, spin}: that
///    molecule with its nuclei moved to `geometry` (one row per atom, in `units`, default bohr).
/// @throws InputError (ConfigError for malformed entries) naming the key, e.g. system.molecules[2]
std::vector<System> resolve_molecules(const SystemConfig& config);

/// `s` as an inline entry of system.molecules named `name`: {name, units: bohr, charge, spin,
/// atoms, and e_ref, e_ref_source when it has them} with full-precision coordinates, so that a
/// run's config holds the geometry itself, not a file that may change or move.
std::string inline_molecule_entry(const System& s, const std::string& name);

/// One entry of system.molecules, in any of the forms above (not yet validated, no overrides
/// applied); `key` names it in errors (e.g. "system.molecules[2]"), relative paths are taken
/// relative to `base_dir` (empty: the working directory), and an inline molecule without a name
/// is called "inline<index + 1>". Used by resolve_molecules and by `nnvmc compare`'s molecules.
/// @throws InputError (ConfigError for malformed entries)
System parse_molecule_entry(const YAML::Node& entry, const std::string& key, const std::string& base_dir,
                            std::size_t index);

/// Whether a molecule given by text is a file (it has a '/' or an extension) rather than a name.
bool looks_like_path(const std::string& s);

/// A molecule name as a result-file group name: characters other than letters, digits and
/// _ . + - become '_' (a frame's traj@3: traj_3); an empty name, "." or ".." becomes "molecule".
std::string usable_molecule_name(std::string name);

/// usable_molecule_name of each; repeated or reserved names get _2, _3, ...; an entry that gave
/// its name (`explicit_names[i]`; none when empty) keeps it before an unnamed entry of that name.
std::vector<std::string> unique_molecule_names(const std::vector<std::string>& names,
                                               const std::vector<bool>& explicit_names = {});

}  // namespace nnvmc
