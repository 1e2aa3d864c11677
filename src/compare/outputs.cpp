#include "compare/outputs.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "compare/runner.hpp"
#include "core/log.hpp"
#include "core/process.hpp"
#include "io/hdf5_file.hpp"
#include "core/json_text.hpp"

namespace nnvmc::compare {
namespace fs = std::filesystem;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kChemicalAccuracy = 1.6e-3;  ///< hartree (1 kcal/mol)
/// The units of compare.csv's and compare.h5's numbers (the report's error column is in mEh; a
/// user audit found nothing saying which the files use).
constexpr const char* kUnits =
    "energy, energy_err, reference, error (E - E_ref) and e_hf in Eh (hartree; compare.h5's chemical_accuracy attribute "
    "too), variance in Eh^2, autocorr_time in evaluation iterations (steps_per_iteration MH steps each, as nnvmc "
    "eval states it), s_per_iteration and the other *_seconds in seconds, *_bytes in bytes";

/// One row of the table.
struct Row {
  const Cell* cell = nullptr;
  std::string status, reason, reference_label;
  std::map<std::string, double> num;               ///< numeric columns
  std::map<std::string, double> s_per_iteration;   ///< training seconds per iteration by stage
  std::vector<double> curve_seconds, curve_energy;  ///< training energy vs cumulative wall time
};

const std::vector<std::string> kNumeric = {
    "n_electrons", "charge", "spin", "parameters", "iterations", "energy", "energy_err", "error_bar_reliable", "reference", "error",
    "e_hf", "above_hf", "variance", "autocorr_time", "s_per_iteration", "peak_tensor_bytes", "max_rss_bytes", "train_seconds", "wall_seconds"};

double num(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : kNaN;
}

Row make_row(const Cell& cell, const Reference& ref, const System& system) {
  Row r;
  r.cell = &cell;
  r.num["charge"] = system.charge;  // (the ion of a molecule has the same atoms: a user audit)
  r.num["spin"] = system.spin;
  const double n_electrons = system.n_electrons();  // (known for a failed or pending cell too: a user audit)
  const std::string dir = cell.config.run.output;
  nlohmann::json j = nlohmann::json::object();
  if (std::ifstream in(dir + "/cell.json"); in) {
    try {
      j = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception&) {
    }
  }
  const std::string state = cell_state(cell);
  r.status = state == "new" ? "pending" : state == "started" ? "partial" : state;
  r.reason = j.value("reason", std::string());
  r.reference_label = ref.label;
  for (const char* k : {"n_electrons", "parameters", "iterations", "energy", "energy_err", "variance",
                        "autocorr_time", "peak_tensor_bytes", "max_rss_bytes", "train_seconds", "wall_seconds"})
    r.num[k] = num(j, k);
  if (!std::isfinite(r.num["n_electrons"])) r.num["n_electrons"] = n_electrons;
  // 1: the evaluation's error_reliable; 0: not (no reblocking plateau and too few walkers, the
  // walkers drifting while measured, or hardly moving)
  r.num["error_bar_reliable"] =
      j.contains("error_reliable") ? (j.value("error_reliable", false) ? 1.0 : 0.0)
      : j.contains("error_plateau") ? (j.value("error_plateau", false) ? 1.0 : 0.0)  // a cell of an earlier nnvmc
                                    : kNaN;
  if (r.status != "done") r.num["energy"] = r.num["energy_err"] = r.num["error_bar_reliable"] = kNaN;
  r.num["reference"] = ref.energy;
  r.num["error"] = r.num["energy"] - ref.energy;
  // 1: the final energy more than 3 error bars above the Hartree–Fock energy the cell's pretraining
  // targeted (a wavefunction worse than the determinant it started from; a user audit found one
  // 13 Eh above, listed as done and reliable); NaN where either is unknown
  r.num["e_hf"] = num(j, "e_hf");
  r.num["above_hf"] = std::isfinite(r.num["energy"]) && std::isfinite(r.num["energy_err"]) && std::isfinite(r.num["e_hf"])
                          ? (r.num["energy"] - r.num["e_hf"] > 3 * r.num["energy_err"] ? 1.0 : 0.0)
                          : kNaN;
  const double iters = num(j, "stage_iterations");
  double total = 0;
  if (j.contains("stage_seconds") && iters > 0)
    for (const auto& [stage, v] : j["stage_seconds"].items()) {
      r.s_per_iteration[stage] = v.get<double>() / iters;
      if (stage.find('.') == std::string::npos) total += v.get<double>() / iters;
    }
  r.num["s_per_iteration"] = iters > 0 ? total : kNaN;
  const std::string results = dir + "/result.h5";
  if (fs::exists(results)) {
    try {
      io::H5File f(results, io::H5File::Mode::read);
      if (f.exists("train/energy") && f.exists("train/seconds")) {
        const auto e = f.read("train/energy"), s = f.read("train/seconds");
        const auto n = std::min(e.numel(), s.numel());
        double t = 0;
        for (std::int64_t i = 0; i < n; ++i) {
          t += s.as<double>()[i];
          r.curve_seconds.push_back(t);
          r.curve_energy.push_back(e.as<double>()[i]);
        }
      }
    } catch (const std::exception& e) {
      log::warn(strfmt("%s: %s", results.c_str(), e.what()));
    }
  }
  return r;
}

/// What follows a cell's energy: "(unreliable)", "(above HF)", both or nothing.
std::string energy_marks(const std::map<std::string, double>& n) {
  std::string m;
  if (n.at("error_bar_reliable") == 0.0) m += " (unreliable)";
  if (n.at("above_hf") == 1.0) m += " (above HF)";
  return m;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c == '\n' ? ' ' : c);
  return q + "\"";
}

std::string csv_number(double v) { return std::isfinite(v) ? strfmt("%.10g", v) : ""; }

std::string human_bytes(double b) {
  if (!std::isfinite(b) || b <= 0) return "–";
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  return strfmt(u ? "%.1f %s" : "%.0f %s", b, units[u]);
}

std::string md_escape(const std::string& s) {
  std::string out;  // (a '|' ends a table cell: escaped, not dropped, which left "log psi  after", a user audit)
  for (char c : s) {
    if (c == '|') out += "\\|";
    else out += c == '\n' ? ' ' : c;
  }
  return out;
}

void write_csv(const std::string& path, const std::vector<Row>& rows, const std::vector<std::string>& stages) {
  std::ostringstream out;
  out << "cell,ansatz,molecule,laplacian,optim,dtype,status,reason,reference_label";
  for (const auto& k : kNumeric) out << "," << k;
  for (const auto& s : stages) out << ",s_per_iteration:" << s;
  out << "\n";
  for (const auto& r : rows) {
    const Cell& c = *r.cell;
    for (const auto& s : {c.id, c.ansatz, c.molecule, c.laplacian, c.optim, c.dtype, r.status, r.reason, r.reference_label})
      out << csv_field(s) << ",";
    for (size_t i = 0; i < kNumeric.size(); ++i) out << (i ? "," : "") << csv_number(r.num.at(kNumeric[i]));
    for (const auto& s : stages) out << "," << csv_number(r.s_per_iteration.count(s) ? r.s_per_iteration.at(s) : kNaN);
    out << "\n";
  }
  io::write_text_atomically(path, out.str());
}

void write_h5(const std::string& path, const CompareSpec& spec, const std::vector<Row>& rows,
              const std::vector<std::string>& stages) {
  io::write_atomically(path, [&](io::H5File& f) {
    const auto n = static_cast<std::int64_t>(rows.size());
    const auto column = [&](const std::string& name, const auto& value) {
      std::vector<double> v;
      for (const auto& r : rows) v.push_back(value(r));
      f.write(name, io::make_array(io::DType::f64, {n}, v.data()));
    };
    for (const auto& k : kNumeric) column("table/" + k, [&](const Row& r) { return r.num.at(k); });
    for (const auto& s : stages)
      column("stages/" + s, [&](const Row& r) { return r.s_per_iteration.count(s) ? r.s_per_iteration.at(s) : kNaN; });
    nlohmann::json strings;
    for (const auto& r : rows) {
      const Cell& c = *r.cell;
      for (const auto& [k, v] : std::map<std::string, std::string>{
               {"cell", c.id}, {"ansatz", c.ansatz}, {"molecule", c.molecule}, {"laplacian", c.laplacian},
               {"optim", c.optim}, {"dtype", c.dtype}, {"status", r.status}, {"reason", r.reason},
               {"reference_label", r.reference_label}})
        strings[k].push_back(v);
      if (!r.curve_seconds.empty()) {
        const auto m = static_cast<std::int64_t>(r.curve_seconds.size());
        f.write("curves/" + c.id + "/seconds", io::make_array(io::DType::f64, {m}, r.curve_seconds.data()));
        f.write("curves/" + c.id + "/energy", io::make_array(io::DType::f64, {m}, r.curve_energy.data()));
      }
    }
    f.set_attr("strings", json_text(strings));
    f.set_attr("name", spec.name);
    f.set_attr("molecules", [&] {
      nlohmann::json m = nlohmann::json::array();
      for (const auto& mol : spec.molecules) m.push_back(mol.label);
      return json_text(m);
    }());
    f.set_attr("chemical_accuracy", strfmt("%.17g", kChemicalAccuracy));
    f.set_attr("units", kUnits);
  });
}

std::string budget_line(const CompareSpec& spec, const ReportInfo& info) {
  // Each setting over the cells: one value, or its range where cells differ (per-ansatz overrides,
  // an optim entry's iterations); it was the first cell's (an untrained hf cell's "0 iterations").
  // (every such setting is >= 0; seeds are uint64)
  const auto range = [&](auto value, bool trained_only) {
    unsigned long long lo = 0, hi = 0;
    bool any = false;
    for (const auto& cell : spec.cells) {
      if (trained_only && cell.optim == "none") continue;
      const unsigned long long v = value(cell.config);
      lo = any ? std::min(lo, v) : v;
      hi = any ? std::max(hi, v) : v;
      any = true;
    }
    return lo == hi ? std::to_string(lo) : std::to_string(lo) + "–" + std::to_string(hi);
  };
  std::string s;
  if (!spec.iterations && spec.minutes > 0) {
    s = strfmt("%g minutes of training", spec.minutes);
  } else {
    s = range([](const Config& c) { return c.optim.iterations; }, true) + " iterations";
    if (spec.minutes > 0) s += strfmt(" or %g minutes of training", spec.minutes);
  }
  s += ", " + range([](const Config& c) { return c.sampler.walkers; }, false) + " walkers, " +
       range([](const Config& c) { return c.eval.steps; }, false) + " evaluation steps" +
       strfmt(", %d thread(s) per cell, %d cell%s at a time, seed ", spec.threads ? spec.threads : info.threads_per_cell,
              info.jobs, info.jobs == 1 ? "" : "s") +
       range([](const Config& c) { return c.run.seed; }, false);
  return s;
}

void write_report(const std::string& path, const CompareSpec& spec, const std::vector<Reference>& refs,
                  const std::vector<Row>& rows, const ReportInfo& info, const std::string& plot_note) {
  std::ostringstream o;
  o << "# Comparison `" << spec.name << "`\n\n";
  o << "From `" << spec.source << "`: " << spec.ansatze.size() << (spec.ansatze.size() == 1 ? " ansatz × " : " ansätze × ")
    << spec.molecules.size() << (spec.molecules.size() == 1 ? " molecule" : " molecules")
    << (spec.cells.size() != spec.ansatze.size() * spec.molecules.size() ? " × the axes' entries" : "") << " = "
    << spec.cells.size() << (spec.cells.size() == 1 ? " cell.\n\n" : " cells.\n\n");
  o << "Budget per cell: " << budget_line(spec, info) << ".\n\n";
  o << "## References\n\n| molecule | electrons | charge | spin | reference (Eh) | source |\n|---|---|---|---|---|---|\n";
  for (size_t i = 0; i < spec.molecules.size(); ++i)
    o << "| " << spec.molecules[i].label << " | " << spec.molecules[i].system.n_electrons() << " | "
      << spec.molecules[i].system.charge << " | " << spec.molecules[i].system.spin << " | "
      << (std::isfinite(refs[i].energy) ? strfmt("%.6f", refs[i].energy) : std::string("–")) << " | "
      << md_escape(refs[i].label) << " |\n";
  o << "\n## Results\n\nError = E − E_ref (mEh); chemical accuracy is 1.6 mEh. s/iteration: the training "
       "stages (sampling, local energy, gradient, optimizer, bookkeeping) per iteration, from the trainer's stage "
       "timers (per stage in compare.csv). Peak tensor memory: the cell's working memory counted by the tensor "
       "allocator; peak RSS: its process (none for a cell whose process was killed). Wall: the cell's processes from start to exit. An energy marked "
       "(unreliable) has error_bar_reliable = 0 in compare.csv: its error bar came from neither a reblocking "
       "plateau in a series of 50 autocorrelation times or more nor enough walkers (evaluate it longer), or its walkers were not in equilibrium (drifting while "
       "measured, or hardly moving: its cell's log says which; give it a longer eval.burn_in), or its energy lies below "
       "a rigorous lower bound on any wavefunction's (walkers that did not sample the wavefunction). An energy marked (above HF) "
       "lies more than three error bars above the Hartree–Fock energy the cell's pretraining targeted, or PauliNet's own "
       "determinant's (e_hf in "
       "compare.csv; above_hf = 1): a wavefunction worse than the Slater determinant it started from, so train it "
       "longer, or pretrain it longer or with a smaller pretrain.lr. In compare.csv and compare.h5: " << kUnits << ".\n\n";
  o << "| ansatz | molecule | laplacian | optim | dtype | status | energy (Eh) | error (mEh) | variance (Eh²) | "
       "τ_corr (iterations) | parameters | s/iteration | peak tensor memory | peak RSS | wall (s) |\n";
  o << "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  double cell_seconds = 0;
  for (const auto& r : rows) {
    const Cell& c = *r.cell;
    const auto& n = r.num;
    const auto f = [](double v, const char* fmt) { return std::isfinite(v) ? strfmt(fmt, v) : std::string("–"); };
    if (std::isfinite(n.at("wall_seconds"))) cell_seconds += n.at("wall_seconds");
    o << "| " << c.ansatz << " | " << c.molecule << " | " << c.laplacian << " | " << c.optim << " | " << c.dtype << " | "
      << r.status << " | "
      << (std::isfinite(n.at("energy")) ? strfmt("%.5f ± %.5f", n.at("energy"), n.at("energy_err")) : "–")
      << energy_marks(n) << " | "
      << (std::isfinite(n.at("error")) ? strfmt("%+.1f ± %.1f", 1e3 * n.at("error"), 1e3 * n.at("energy_err")) : "–")
      << " | " << f(n.at("variance"), "%.4f") << " | " << f(n.at("autocorr_time"), "%.1f") << " | "
      << f(n.at("parameters"), "%.0f") << " | " << f(n.at("s_per_iteration"), "%.4f") << " | "
      << human_bytes(n.at("peak_tensor_bytes")) << " | " << human_bytes(n.at("max_rss_bytes")) << " | "
      << f(n.at("wall_seconds"), "%.1f") << " |\n";
  }
  bool any_reason = false;
  for (const auto& r : rows)
    if (r.status == "failed") {
      if (!any_reason) o << "\n### Failed cells\n\n";
      any_reason = true;
      o << "- `" << r.cell->id << "`: " << md_escape(r.reason) << "\n";
    }
  o << "\nCells' wall time (sum): " << strfmt("%.1f s", cell_seconds)
    << "; this invocation: " << strfmt("%.1f s", info.wall_seconds) << ".\n\n";
  o << "## Plots\n\n";
  if (plot_note.empty()) {
    o << "![energy error vs wall time](energy_vs_time.png)\n\n"
         "Energy error of the training iterations (running mean) against training wall time, one panel per "
         "molecule.\n\n![final errors](final_errors.png)\n\n"
         "Final evaluated error per cell with its error bar (log scale; dashed: chemical accuracy; hatched: "
         "below the reference). In both plots a failed cell is a cross, and a cell whose error bar is marked "
         "unreliable in the table is drawn hollow.\n";
  } else {
    // (the script names the files it made; this report is not rewritten by it: a user audit)
    o << "Not made: " << plot_note << ". Make them with `python3 scripts/plot_compare.py " << spec.output
      << "`, which writes `energy_vs_time.png` and `final_errors.png` here (not linked in this report).\n";
  }
  o << "\nFiles: `compare.csv`, `compare.h5` (table/, stages/<stage> in s/iteration, curves/<cell>/{seconds,energy}), one run directory per "
       "cell under `cells/`.\n";
  io::write_text_atomically(path, o.str());
}

/// One line per cell: what `nnvmc compare` prints on stdout (report.md has the whole table); in
/// ASCII, so that printf's byte widths align the columns.
std::string short_table(const std::vector<Row>& rows) {
  std::size_t width = 4, energy_width = 26;  // (sized to the widest entry: "(unreliable)" shifted the next column)
  std::vector<std::string> energies;
  for (const auto& r : rows) {
    const auto& n = r.num;
    width = std::max(width, r.cell->id.size());
    energies.push_back(std::isfinite(n.at("energy"))
                           ? strfmt("%.5f +- %.5f%s", n.at("energy"), n.at("energy_err"), energy_marks(n).c_str())
                           : "-");
    energy_width = std::max(energy_width, energies.back().size());
  }
  std::string t = strfmt("%-*s  %-11s  %-*s  %s\n", static_cast<int>(width), "cell", "status",
                         static_cast<int>(energy_width), "energy (Eh)", "error vs reference (mEh)");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& n = rows[i].num;
    t += strfmt("%-*s  %-11s  %-*s  %s\n", static_cast<int>(width), rows[i].cell->id.c_str(), rows[i].status.c_str(),
                static_cast<int>(energy_width), energies[i].c_str(),
                std::isfinite(n.at("error")) ? strfmt("%+.1f +- %.1f", 1e3 * n.at("error"), 1e3 * n.at("energy_err")).c_str()
                                             : "-");
  }
  return t;
}

}  // namespace

std::string write_outputs(const CompareSpec& spec, const std::vector<Reference>& references, const ReportInfo& info) {
  std::vector<Row> rows;
  std::set<std::string> stage_set;
  for (const auto& cell : spec.cells) {
    rows.push_back(make_row(cell, references.at(cell.molecule_index), spec.molecules.at(cell.molecule_index).system));
    for (const auto& [s, v] : rows.back().s_per_iteration) stage_set.insert(s);
  }
  const std::vector<std::string> stages(stage_set.begin(), stage_set.end());
  fs::create_directories(spec.output);
  write_csv(spec.output + "/compare.csv", rows, stages);
  write_h5(spec.output + "/compare.h5", spec, rows, stages);
  // A previous run's plots would stand beside a report that says they were not made: only the
  // names the plotting script writes are removed.
  std::error_code ec;
  for (const char* plot : {"energy_vs_time.png", "final_errors.png", "plot.log"}) fs::remove(fs::path(spec.output) / plot, ec);
  std::string note;
  if (!info.plots) note = "plots disabled (--no-plots)";
  else if (!run_python_script("plot_compare.py", {spec.output}, spec.output + "/plot.log", note) && note.empty())
    note = "the plotting script failed";
  if (!note.empty() && info.plots) log::warn("plots: " + note);  // (not for what --no-plots asked)
  write_report(spec.output + "/report.md", spec, references, rows, info, note);
  return short_table(rows);
}

}  // namespace nnvmc::compare
