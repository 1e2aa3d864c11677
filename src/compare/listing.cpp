#include "compare/listing.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "compare/runner.hpp"
#include "core/log.hpp"
#include "io/directory_lock.hpp"

namespace nnvmc::compare {
namespace {
/// The training budget of a cell as given: iterations and/or minutes, or none (a baseline).
std::string budget(const Config& c) {
  if (c.optim.iterations == 0) return "evaluation only";
  // (a minutes-only budget: its iteration count is a placeholder, which --list printed)
  if (c.optim.iterations >= kUnboundedIterations && c.optim.minutes > 0) return strfmt("%g min", c.optim.minutes);
  std::string s = strfmt("%d iterations", c.optim.iterations);
  if (c.optim.minutes > 0) s += strfmt(" or %g min", c.optim.minutes);
  return s;
}
}  // namespace

std::string list_comparison(const CompareSpec& spec, const std::vector<Reference>& references) {
  std::size_t width = 4, budget_width = 8;
  for (const auto& cell : spec.cells) {
    width = std::max(width, cell.id.size());
    budget_width = std::max(budget_width, budget(cell.config).size());
  }
  std::map<std::string, int> counts;
  std::string rows;
  for (const auto& cell : spec.cells) {
    std::string state = cell_state(cell), outcome = cell_outcome(cell), pid;
    if (io::lock_held(cell.config.run.output, &pid)) {  // (a compare or train --resume at work in it)
      outcome = "in use by an nnvmc process" + (pid.empty() ? std::string() : " (pid " + pid + ")") +
                (outcome.empty() ? std::string() : "; before: " + outcome);
      state = "running";
    } else if (holds_other_configuration(cell)) {
      const bool kept = has_progress(cell);  // (as the runner decides)
      outcome = "its directory holds another configuration (" + configuration_change(cell) + ")" +
                (kept ? ": compare refuses to run (delete this cell's directory to redo it)" : ", which compare replaces");
      state = kept ? "differs" : "replaced";
    } else if (needs_more_training(cell)) {
      state = "continues";
      outcome = strfmt("trained %lld iterations; with the budget now given it trains on from its checkpoint (%s)",
                       static_cast<long long>(trained_iterations(cell)), outcome.c_str());
    } else if (const std::int64_t trained = trained_iterations(cell); trained > cell.config.optim.iterations) {
      state = "differs";
      outcome = strfmt("trained %lld iterations, more than the %d given: compare refuses to run", static_cast<long long>(trained),
                       cell.config.optim.iterations);
    }
    ++counts[state];
    std::string row = strfmt("%-*s  %-11s  %-*s  %7d  %s", static_cast<int>(width), cell.id.c_str(), state.c_str(),
                             static_cast<int>(budget_width), budget(cell.config).c_str(), cell.config.sampler.walkers,
                             outcome.c_str());
    rows += row.erase(row.find_last_not_of(' ') + 1) + "\n";  // (no trailing blanks before an empty outcome)
  }
  std::string tally;
  for (const char* s :
       {"done", "continues", "running", "failed", "interrupted", "started", "differs", "replaced", "new"})
    if (counts[s] > 0) tally += strfmt("%s%d %s", tally.empty() ? "" : ", ", counts[s], s);
  std::string out = strfmt("%s: %zu cell%s in %s (%s)\n\n", spec.source.c_str(), spec.cells.size(),
                           spec.cells.size() == 1 ? "" : "s", spec.output.c_str(), tally.c_str());
  if (std::string pid; io::lock_held(spec.output, &pid))
    out += "a compare is running in this output" + (pid.empty() ? std::string() : " (pid " + pid + ")") +
           ": the states below are those of this moment\n\n";
  out += strfmt("%-*s  %-11s  %-*s  %7s  %s\n", static_cast<int>(width), "cell", "state", static_cast<int>(budget_width),
                "training", "walkers", "outcome");
  out += rows + "\nreferences:\n";
  std::size_t name_width = 4;
  for (const auto& m : spec.molecules) name_width = std::max(name_width, m.label.size());
  for (std::size_t i = 0; i < spec.molecules.size() && i < references.size(); ++i) {
    const auto& r = references[i];
    out += strfmt("  %-*s  %-16s  %s\n", static_cast<int>(name_width), spec.molecules[i].label.c_str(),
                  std::isfinite(r.energy) ? strfmt("%.6f Eh", r.energy).c_str() : "-", r.label.c_str());
  }
  if (const std::string note = cells_not_in_spec_note(spec); !note.empty()) out += "\n" + note + "\n";
  return out;
}

std::vector<std::string> cells_not_in_spec(const CompareSpec& spec) {
  std::set<std::string> ids;
  for (const auto& c : spec.cells) ids.insert(c.id);
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(spec.output + "/cells", ec))
    if (e.is_directory(ec) && !ids.count(e.path().filename().string())) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string cells_not_in_spec_note(const CompareSpec& spec) {
  const auto extra = cells_not_in_spec(spec);
  if (extra.empty()) return "";
  std::string names;
  for (const auto& n : extra) names += (names.empty() ? "" : ", ") + n;
  return strfmt("%s/cells holds %zu cell%s not in %s (%s): left as %s, and not in the table", spec.output.c_str(),
                extra.size(), extra.size() == 1 ? "" : "s", spec.source.c_str(), names.c_str(),
                extra.size() == 1 ? "it was" : "they were");
}

}  // namespace nnvmc::compare
