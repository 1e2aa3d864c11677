#pragma once
/// @file spec.hpp
/// The comparison file of `nnvmc compare`: a matrix of ansätze × molecules × optional axes
/// (laplacian, optim, dtype) with a common budget per cell, expanded into one validated run
/// config per cell. Torch-free: nothing here builds a model.
#include <optional>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/system.hpp"

namespace nnvmc::compare {

/// How each molecule's reference energy is chosen (`references:`).
enum class ReferenceMode {
  exact,      ///< the molecule file's e_ref (required for every molecule)
  ccsd_t,     ///< CCSD(T) in reference_basis, computed by nnvmc's ccsd module
  automatic,  ///< e_ref when the molecule file has one, otherwise CCSD(T)
};

/// One molecule of the matrix.
struct MoleculeEntry {
  std::string label;  ///< name in tables and cell ids (file stem, name, or inline<i>)
  System system;      ///< the molecule as it is run (charge/spin applied), with e_ref if known
};

/// One cell of the matrix: a run config and the labels of its coordinates.
struct Cell {
  std::string id;          ///< unique and usable as a directory name: ansatz__molecule[__axis...]
  std::string ansatz;      ///< ansatz label
  std::string molecule;    ///< molecule label
  std::string laplacian;   ///< hamiltonian.laplacian of the cell
  std::string optim;       ///< optimizer label (optim axis entry, or optim.type)
  std::string dtype;       ///< run.dtype of the cell
  int molecule_index = 0;  ///< index into CompareSpec::molecules
  Config config;           ///< the validated run config (run.output = <output>/cells/<id>)
};

/// Iterations of a cell whose budget is minutes only (training ends on the clock).
constexpr int kUnboundedIterations = 100000000;

/// A parsed comparison file.
struct CompareSpec {
  std::string source;                   ///< the file (for messages)
  std::string name;                     ///< the file's stem
  std::vector<std::string> ansatze;     ///< ansatz labels in file order
  std::vector<MoleculeEntry> molecules;  ///< in file order
  double minutes = 0;                   ///< wall-time budget of training per cell (0: none)
  std::optional<int> iterations;        ///< iterations per cell as given (0: evaluation only)
  int threads = 0;                      ///< intra-op threads per cell as given (0: split the cores)
  ReferenceMode references = ReferenceMode::automatic;
  std::string reference_basis = "cc-pvdz";  ///< basis of CCSD(T) references
  std::string output;                   ///< output directory
  std::vector<Cell> cells;              ///< ansatz-major, then molecule, laplacian, optim, dtype
};

/// Parses a comparison file's text; `overrides` (`key=value`, e.g. `iterations=10`) are applied
/// first. Relative paths (run configs, molecule files, `base`) are tried relative to the
/// working directory, then to `file_dir`.
/// @throws ConfigError naming the key (and line) for any bad key, value, ansatz or molecule.
CompareSpec parse_compare_spec(const std::string& yaml_text, const std::vector<std::string>& overrides,
                               const std::string& where, const std::string& file_dir = ".");

/// Loads and parses a comparison file (see parse_compare_spec).
CompareSpec load_compare_spec(const std::string& path, const std::vector<std::string>& overrides = {});

/// The run config with run.threads, optim.minutes and run.output cleared: two cells are the same
/// run when these agree (a comparison given another time budget continues its cells, and one
/// copied to another output continues there).
Config identity_settings(const Config& config);

/// identity_settings(config) as YAML.
std::string cell_identity(const Config& config);

/// Replaces characters unsafe in directory names by '_' (a warning names a label it changes).
std::string sanitize_label(const std::string& label);

}  // namespace nnvmc::compare
