#pragma once
/// @file listing.hpp
/// `nnvmc compare FILE --list`: the cells a comparison runs and where each stands, and the
/// references, from the file and its output directory alone (nothing is run or written).
/// Torch-free.
#include <string>
#include <vector>

#include "compare/reference.hpp"
#include "compare/spec.hpp"

namespace nnvmc::compare {

/// A text table: one line per cell of `spec` (id, state on disk or "running" while a process
/// holds its directory's lock, training budget, walkers, and its outcome when it has ended), a
/// count of the states, then one line per molecule with its reference (`references` as
/// known_references gives them, in the order of spec.molecules). A compare at work in the
/// output is said above the table.
std::string list_comparison(const CompareSpec& spec, const std::vector<Reference>& references);

/// Directories under the output's cells/ that are no cell of `spec` (left by an earlier version
/// of the file: a molecule or ansatz removed since), sorted; they are left as they were and are
/// not in the table. Empty when there are none or no cells/ (a user audit: never mentioned).
std::vector<std::string> cells_not_in_spec(const CompareSpec& spec);

/// One sentence naming cells_not_in_spec, or "" when there are none.
std::string cells_not_in_spec_note(const CompareSpec& spec);

}  // namespace nnvmc::compare
