#pragma once
/// @file outputs.hpp
/// The comparison's results: compare.csv and compare.h5 (one row per cell), report.md with the
/// table, and the plots made by scripts/plot_compare.py from compare.h5. Torch-free.
#include <string>
#include <vector>

#include "compare/reference.hpp"
#include "compare/spec.hpp"

namespace nnvmc::compare {

/// Context of the report besides the cells' own files.
struct ReportInfo {
  int jobs = 1;                 ///< cells run at once
  int threads_per_cell = 1;     ///< intra-op threads of each cell
  double wall_seconds = 0;      ///< this invocation's wall time
  bool plots = true;            ///< run the plotting script
};

/// Writes compare.csv, compare.h5 and report.md into spec.output (and the plots when python3
/// with matplotlib and h5py is available). Cells not finished yet appear with their state.
/// @return the table's short form, for stdout: one line per cell (cell, status, energy ± error,
/// error vs the reference in mEh)
std::string write_outputs(const CompareSpec& spec, const std::vector<Reference>& references, const ReportInfo& info);

}  // namespace nnvmc::compare
