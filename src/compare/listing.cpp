#include "compare/listing.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "compare/runner.hpp"
#include "core/log.hpp"
#include "io/output_kind.hpp"

namespace nnvmc::compare {
namespace {
/// The training budget of a cell as given: iterations and/or minutes, or none (a baseline).
std::string budget(const Config& c) {
  if (c.optim.iterations == 0) return "evaluation only";
  std::string s = strfmt("%d iterations", c.optim.iterations);
  if (c.optim.minutes > 0) s += strfmt(" or %g min", c.optim.minutes);
  return s;
}
}  // namespace

std::string list_comparison(const CompareSpec& spec, const std::vector<Reference>& references) {
  std::size_t width = 4;
  for (const auto& cell : spec.cells) width = std::max(width, cell.id.size());
  std::map<std::string, int> counts;
  std::string rows;
  for (const auto& cell : spec.cells) {
    std::string state = cell_state(cell), outcome = cell_outcome(cell);
    if (holds_other_configuration(cell)) {
      const bool kept = state == "done" || state == "started" || state == "interrupted";
      outcome = kept ? "its directory holds a run of another configuration: compare refuses to run (delete "
                       "this cell's directory to redo it)"
                     : "its directory holds another configuration, which compare replaces";
      state = "differs";
    }
    ++counts[state];
    std::string row = strfmt("%-*s  %-11s  %-24s  %7d  %s", static_cast<int>(width), cell.id.c_str(), state.c_str(),
                             budget(cell.config).c_str(), cell.config.sampler.walkers, outcome.c_str());
    rows += row.erase(row.find_last_not_of(' ') + 1) + "\n";  // (no trailing blanks before an empty outcome)
  }
  std::string tally;
  for (const char* s : {"done", "failed", "interrupted", "started", "differs", "new"})
    if (counts[s] > 0) tally += strfmt("%s%d %s", tally.empty() ? "" : ", ", counts[s], s);
  std::string out = strfmt("%s: %zu cells in %s (%s)\n", spec.source.c_str(), spec.cells.size(),
                           spec.output.c_str(), tally.c_str());
  if (const std::string marker = io::training_run_marker(spec.output); !marker.empty())
    out += strfmt("%s holds a training run (%s), not a comparison: compare refuses to run there\n",
                  spec.output.c_str(), marker.c_str());
  out += "\n";
  out += strfmt("%-*s  %-11s  %-24s  %7s  %s\n", static_cast<int>(width), "cell", "state", "training", "walkers",
                "outcome");
  out += rows + "\nreferences:\n";
  std::size_t name_width = 4;
  for (const auto& m : spec.molecules) name_width = std::max(name_width, m.label.size());
  for (std::size_t i = 0; i < spec.molecules.size() && i < references.size(); ++i) {
    const auto& r = references[i];
    out += strfmt("  %-*s  %-16s  %s\n", static_cast<int>(name_width), spec.molecules[i].label.c_str(),
                  std::isfinite(r.energy) ? strfmt("%.6f Eh", r.energy).c_str() : "-", r.label.c_str());
  }
  return out;
}

}  // namespace nnvmc::compare
