#pragma once
/// @file data_paths.hpp
/// Where nnvmc finds its read-only data (basis sets, named molecules, plotting scripts), so that
/// an installed executable can be moved with its prefix: the lookup order is
///   1. $NNVMC_DATA_DIR,
///   2. <prefix>/share/nnvmc when this executable is <prefix>/bin/nnvmc (cmake --install layout,
///      recognised by its data/basis folder),
///   3. the source tree the build was configured from.
/// Each sub-folder keeps its own override (NNVMC_BASIS_DIR, NNVMC_MOLECULES, NNVMC_SCRIPTS).
#include <string>

namespace nnvmc {

/// The data root: a folder holding data/basis, configs/molecules and scripts.
std::string data_root();

/// Gaussian basis files (*.nw): $NNVMC_BASIS_DIR or data_root()/data/basis.
std::string basis_data_dir();

/// Named molecules (*.yaml): $NNVMC_MOLECULES or data_root()/configs/molecules.
std::string molecules_data_dir();

/// Plotting scripts: $NNVMC_SCRIPTS or data_root()/scripts.
std::string scripts_data_dir();

}  // namespace nnvmc
