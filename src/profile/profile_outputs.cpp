#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/log.hpp"
#include "core/process.hpp"
#include "io/hdf5_file.hpp"
#include "profile/profile.hpp"
#include "core/json_text.hpp"

namespace nnvmc::profile {
namespace fs = std::filesystem;

namespace {

/// Number or null (JSON has no NaN).
nlohmann::json number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }

nlohmann::json stage_json(const StageProfile& s) {
  nlohmann::json j;
  j["seconds"] = s.seconds;
  j["peak_bytes"] = s.peak_bytes;
  j["held_bytes"] = s.held_bytes;
  j["profiled_wall_seconds"] = s.ops.wall_seconds;
  j["op_seconds"] = s.ops.seconds();
  j["op_coverage"] = s.ops.coverage;
  j["flops"] = s.ops.flops();
  j["bytes"] = s.ops.bytes();
  j["intensity"] = number(s.ops.bytes() > 0 ? s.ops.flops() / s.ops.bytes() : NAN);
  j["gflops"] = number(s.seconds > 0 && s.ops.flops() > 0 ? s.ops.flops() / s.seconds * 1e-9 : NAN);
  for (const auto g : all_groups()) {
    const auto it = s.ops.groups.find(group_name(g));
    const GroupStats gs = it != s.ops.groups.end() ? it->second : GroupStats{};
    j["groups"][group_name(g)] = {{"seconds", gs.seconds}, {"calls", gs.calls}, {"flops", gs.flops},
                                  {"bytes", gs.bytes}, {"reported_flops", gs.reported_flops}};
  }
  std::vector<std::pair<double, std::string>> top;
  for (const auto& [name, sec] : s.ops.op_seconds) top.emplace_back(sec, name);
  std::sort(top.rbegin(), top.rend());
  j["top_ops"] = nlohmann::json::array();
  for (size_t i = 0; i < top.size() && i < 12; ++i)
    j["top_ops"].push_back({top[i].second, group_name(classify_op(top[i].second)), top[i].first});
  return j;
}

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a.empty() ? "unknown" : a + " " + b + " " + c;
}

nlohmann::json to_json(const ProfileReport& r) {
  nlohmann::json j;
  j["config"] = r.config;
  j["ansatz"] = r.ansatz;
  j["laplacian"] = r.laplacian;
  j["optimizer"] = r.optimizer;
  j["dtype"] = r.dtype;
  j["device"] = r.device;
  j["threads"] = r.threads;
  j["stage_clock"] = r.stage_clock;
  j["load_average"] = load_average();
  j["process_peak_bytes"] = r.process_peak_bytes;
  j["warnings"] = r.warnings;
  j["options"] = {{"warmup", r.options.warmup}, {"iterations", r.options.iterations}, {"profiled", r.options.profiled}};
  const auto& rl = r.roofline;
  if (rl.peak_gflops > 0)
    j["roofline"] = {{"device", rl.device}, {"dtype", rl.dtype}, {"threads", rl.threads},
                     {"peak_gflops", rl.peak_gflops}, {"gemm_size", rl.gemm_size},
                     {"bandwidth_gbs", rl.bandwidth_gbs}, {"triad_mib", rl.triad_mib},
                     {"ridge", rl.ridge()}, {"theoretical_gflops", number(rl.theoretical_gflops > 0 ? rl.theoretical_gflops : NAN)}};
  else
    j["roofline"] = nullptr;  // not measured (--no-roofline)
  j["cpu"] = {{"model", r.cpu.model}, {"ghz", r.cpu.ghz}, {"flops_per_cycle_f64", r.cpu.flops_per_cycle_f64},
              {"cores", r.cpu.cores}, {"assumption", r.cpu.assumption}};
  j["molecules"] = nlohmann::json::array();
  for (const auto& m : r.molecules) {
    nlohmann::json mj = {{"molecule", m.molecule}, {"n_electrons", m.n_electrons}, {"walkers", m.walkers},
                         {"molecules_per_iteration", m.molecules_per_iteration},
                         {"warmup_iterations", m.warmup},
                         {"parameters", m.parameters}, {"iteration_seconds", m.iteration_seconds},
                         {"stage_seconds", m.stage_seconds}, {"stage_share", m.stage_share},
                         {"profiled_wall_seconds", m.profiled_wall},
                         {"profiled_op_seconds", m.profiled_ops},
                         {"op_coverage", number(m.profiled_wall > 0 ? m.profiled_ops / m.profiled_wall : NAN)},
                         {"top_level_stages", top_level_stages(m)},
                         {"iteration_series", m.iteration_series}, {"stage_series", m.stage_series}};
    for (const auto& [s, st] : m.stages) {
      mj["stages"][s] = stage_json(st);
      if (r.options.profiled == 0)  // not profiled: no operator figures, rather than zeros
        for (const char* k : {"profiled_wall_seconds", "op_seconds", "op_coverage", "flops", "bytes", "intensity",
                              "gflops", "groups"})
          mj["stages"][s][k] = nullptr;
    }
    j["molecules"].push_back(mj);
  }
  for (const auto& [s, f] : r.time_scaling)
    j["time_scaling"][s] = {{"exponent", number(f.exponent)}, {"exponent_err", number(f.exponent_err)},
                            {"prefactor", number(f.prefactor)}, {"points", f.points}};
  for (const auto& [s, f] : r.memory_scaling)
    j["memory_scaling"][s] = {{"exponent", number(f.exponent)}, {"exponent_err", number(f.exponent_err)},
                              {"prefactor", number(f.prefactor)}, {"points", f.points}};
  return j;
}

void write_h5(const ProfileReport& r, const std::string& path, const nlohmann::json& j) {
  std::set<std::string> stage_set;
  for (const auto& m : r.molecules)
    for (const auto& [s, st] : m.stages) stage_set.insert(s);
  const std::vector<std::string> stages(stage_set.begin(), stage_set.end());
  const auto M = static_cast<std::int64_t>(r.molecules.size()), S = static_cast<std::int64_t>(stages.size());
  const auto G = static_cast<std::int64_t>(all_groups().size());
  std::vector<double> ne, it, sec(M * S, NAN), peak(M * S, NAN), held(M * S, NAN), flops(M * S, NAN), bytes(M * S, NAN),
      groups(M * S * G, 0.0);
  for (std::int64_t a = 0; a < M; ++a) {
    const auto& m = r.molecules[a];
    ne.push_back(m.n_electrons);
    it.push_back(m.iteration_seconds);
    for (std::int64_t b = 0; b < S; ++b) {
      const auto f = m.stages.find(stages[b]);
      if (f == m.stages.end()) continue;
      sec[a * S + b] = f->second.seconds;
      peak[a * S + b] = f->second.peak_bytes;
      held[a * S + b] = f->second.held_bytes;
      if (r.options.profiled == 0) {  // not profiled: NaN, not zeros
        for (std::int64_t g = 0; g < G; ++g) groups[(a * S + b) * G + g] = NAN;
        continue;
      }
      flops[a * S + b] = f->second.ops.flops();
      bytes[a * S + b] = f->second.ops.bytes();
      for (std::int64_t g = 0; g < G; ++g) {
        const auto gi = f->second.ops.groups.find(group_name(all_groups()[g]));
        if (gi != f->second.ops.groups.end()) groups[(a * S + b) * G + g] = gi->second.seconds;
      }
    }
  }
  io::write_atomically(path, [&](io::H5File& f) {
    using io::DType;
    f.write("n_electrons", io::make_array(DType::f64, {M}, ne.data()));
    f.write("iteration_seconds", io::make_array(DType::f64, {M}, it.data()));
    f.write("stage_seconds", io::make_array(DType::f64, {M, S}, sec.data()));
    f.write("stage_peak_bytes", io::make_array(DType::f64, {M, S}, peak.data()));
    f.write("stage_held_bytes", io::make_array(DType::f64, {M, S}, held.data()));
    f.write("stage_flops", io::make_array(DType::f64, {M, S}, flops.data()));
    f.write("stage_bytes", io::make_array(DType::f64, {M, S}, bytes.data()));
    f.write("group_seconds", io::make_array(DType::f64, {M, S, G}, groups.data()));
    nlohmann::json names = nlohmann::json::array(), gnames = nlohmann::json::array(), mols = nlohmann::json::array();
    for (const auto& s : stages) names.push_back(s);
    for (const auto g : all_groups()) gnames.push_back(group_name(g));
    for (const auto& m : r.molecules) mols.push_back(m.molecule);
    f.set_attr("stages", json_text(names));
    f.set_attr("groups", json_text(gnames));
    f.set_attr("molecules", json_text(mols));
    f.set_attr("profile_json", json_text(j));
  });
}

std::string fmt_bytes(double b) {
  if (!(b > 0)) return "0";
  const char* u[] = {"B", "KiB", "MiB", "GiB"};
  int k = 0;
  while (b >= 1024 && k < 3) b /= 1024, ++k;
  return strfmt("%.1f %s", b, u[k]);
}

std::string pct(double part, double whole) { return whole > 0 ? strfmt("%.0f%%", 100.0 * part / whole) : "–"; }

void write_report(const ProfileReport& r, const std::string& path, const std::string& plot_note) {
  std::ostringstream o;
  o << "# Profile of `" << r.config << "`\n\n";
  o << "Ansatz `" << r.ansatz << "`, Laplacian `" << r.laplacian << "`, optimizer `" << r.optimizer << "`, "
    << r.dtype << " on " << r.device << ", " << r.threads << " thread(s). Per molecule: " << r.options.warmup
    << " warm-up (more for a config of several molecules, until each was trained once), " << r.options.iterations << " timed (medians) and " << r.options.profiled
    << " profiled iterations. Stage times: " << r.stage_clock << ". Load average at the end: " << load_average()
    << ".\n\n";
  for (const auto& w : r.warnings) o << "**Warning:** " << w << ".\n\n";
  o << "## Stage times (median s/iteration)\n\nStages are the trainer's own StageTimers scopes; `local_energy` "
       "contains `laplacian` (kinetic terms) and `potential`; `bookkeeping` is the trainer writing results (and, in "
       "a training run, progress lines and checkpoints). The timed iterations are the config's training steps "
       "without pretraining, checkpoints or progress lines but the last iteration's (the scratch run writes its one "
       "checkpoint after them): a training run adds one checkpoint every run.checkpoint_every iterations. The last "
       "column is the median over iterations of the stages' share of the "
       "iteration's wall time. Each stage's median is taken on its own, so the stages' percentages need not add up "
       "to it.\n\n";
  o << "| molecule | N_e | walkers | iteration | sampling | local energy | ↳ laplacian | ↳ potential | gradient | "
       "optimizer | bookkeeping | Σ stages / iteration |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  const auto sec = [](const MoleculeProfile& m, const std::string& s) {
    const auto it = m.stages.find(s);
    return it == m.stages.end() ? std::string("–")
                                : strfmt("%.4f (%s)", it->second.seconds, pct(it->second.seconds, m.iteration_seconds).c_str());
  };
  for (const auto& m : r.molecules)
    o << "| " << m.molecule << " | " << m.n_electrons << " | " << m.walkers << " | "
      << strfmt("%.4f", m.iteration_seconds) << " | " << sec(m, "sampling") << " | " << sec(m, "local_energy") << " | "
      << sec(m, "local_energy.laplacian") << " | " << sec(m, "local_energy.potential") << " | " << sec(m, "gradient")
      << " | " << sec(m, "optimizer") << " | " << sec(m, "bookkeeping") << " | "
      << strfmt("%.0f%%", 100.0 * m.stage_share) << " |\n";
  o << "\n## Peak working memory per stage\n\nTensor memory allocated within the stage at its peak, and "
       "(+ held) what was already allocated when it began: parameters, walkers, optimizer state and buffers kept "
       "between iterations, such as SR/minSR/SPRING's per-walker gradients.";
  if (r.process_peak_bytes > 0)
    o << " Tensors only: the process as a whole peaked at " << fmt_bytes(static_cast<double>(r.process_peak_bytes))
      << " resident (libraries, the operator profiler's buffers and every molecule profiled included); size "
         "jobs from that, or from `nnvmc train`'s own.";
  o << "\n\n| molecule |";
  // the stages of the time table (the potential and bookkeeping were left out)
  const std::vector<std::string> mem_stages{"sampling",  "local_energy", "local_energy.laplacian", "local_energy.potential",
                                            "gradient",  "optimizer",    "bookkeeping"};
  for (const auto& s : mem_stages) o << " " << s << " |";
  o << "\n|---|";
  for (size_t i = 0; i < mem_stages.size(); ++i) o << "---|";
  o << "\n";
  for (const auto& m : r.molecules) {
    o << "| " << m.molecule << " |";
    for (const auto& s : mem_stages) {
      const auto it = m.stages.find(s);
      o << " " << (it == m.stages.end() ? std::string("–")
                                        : fmt_bytes(it->second.peak_bytes) + " (+ " + fmt_bytes(it->second.held_bytes) + ")")
        << " |";
    }
    o << "\n";
  }
  o << "\n## Operator mix (share of operator self time per stage, profiled iterations)\n\nMedians over the "
       "profiled iterations. `ops cover`: operator self time / the stage's wall time under the profiler (the rest "
       "is the profiler's own overhead and code between operators; above 100 % when walker parts run on several "
       "threads at once, run.walker_threads, as self time is summed over threads); FLOP/byte and GFLOP/s (FLOPs over the timed "
       "median stage time) from the FLOP and byte estimates.\n\n"
       "| molecule | stage | gemm | elementwise | reduction | data movement | linalg | other | ops/iteration | "
       "ops cover | FLOP/byte | GFLOP/s |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  if (r.options.profiled == 0) o << "| – | not profiled (--profile-iterations 0) | | | | | | | | | | |\n";
  for (const auto& m : r.molecules) {
    if (r.options.profiled == 0) break;
    auto stages = top_level_stages(m);
    for (const char* sub : {"local_energy.laplacian", "local_energy.potential"})
      if (m.stages.count(sub)) stages.push_back(sub);
    for (const auto& s : stages) {
      const auto& st = m.stages.at(s);
      const double total = st.ops.seconds();
      double calls = 0;
      o << "| " << m.molecule << " | " << s << " |";
      for (const auto g : all_groups()) {
        const auto it = st.ops.groups.find(group_name(g));
        o << " " << (it == st.ops.groups.end() ? std::string("0%") : pct(it->second.seconds, total)) << " |";
        if (it != st.ops.groups.end()) calls += it->second.calls;
      }
      const double ai = st.ops.bytes() > 0 ? st.ops.flops() / st.ops.bytes() : NAN;
      o << " " << strfmt("%.0f", calls) << " | " << strfmt("%.0f%%", 100.0 * st.ops.coverage) << " | "
        << (std::isfinite(ai) ? strfmt("%.3f", ai) : "–") << " | "
        << (st.seconds > 0 ? strfmt("%.2f", st.ops.flops() / st.seconds * 1e-9) : "–") << " |\n";
    }
  }
  // Operators between the stages (finiteness checks, walker bookkeeping): in profile.json, and said here
  // (the table above has no row for them: they are in no stage's wall time)
  for (const auto& m : r.molecules) {
    const auto it = m.stages.find(kOutsideStages);
    if (r.options.profiled == 0 || it == m.stages.end() || !(it->second.ops.seconds() > 0)) continue;
    double calls = 0;
    for (const auto& [g, gs] : it->second.ops.groups) calls += gs.calls;
    o << strfmt("\n%s: operators outside the timed stages (between them, e.g. finiteness checks) took %.3f ms per "
                "iteration in %.0f calls, in no row above (profile.json: stage \"%s\").\n",
                m.molecule.c_str(), 1e3 * it->second.ops.seconds(), calls, kOutsideStages.c_str());
  }
  const auto& rl = r.roofline;
  o << "\n## Roofline\n\n";
  if (rl.peak_gflops > 0) {
    o << strfmt("Measured on this machine (the best of a few repeats each, so a busy machine lowers them): %s (n = %d) "
                "%.1f GFLOP/s, triad bandwidth %.1f GB/s (%.0f MiB), ridge point %.2f FLOP/byte, %d thread(s).",
                rl.dtype == "float32" ? "SGEMM" : "DGEMM", rl.gemm_size, rl.peak_gflops, rl.bandwidth_gbs,
                rl.triad_mib, rl.ridge(), rl.threads);
    if (rl.theoretical_gflops > 0)
      o << strfmt(" Nominal peak of the cores used, at the clock /proc/cpuinfo gives: %.1f GFLOP/s (%s; %s); a "
                  "measured rate above it is a turbo clock.", rl.theoretical_gflops,
                  r.cpu.model.c_str(), r.cpu.assumption.c_str());
    o << " A stage whose FLOP/byte is below the ridge point is memory-bound on this machine. FLOPs and bytes "
         "are estimates from the profiler's input shapes (see src/profile/op_groups.hpp).\n\n";
  } else {
    o << "Not measured.\n\n";
  }
  o << "## Scaling with the number of electrons (time ∝ N^p)\n\n";
  std::set<int> sizes;
  for (const auto& m : r.molecules) sizes.insert(m.n_electrons);
  if (sizes.size() < 2)
    o << "From " << (r.molecules.size() == 1 ? "one molecule" : "molecules of one size")
      << ": no scaling (profile several sizes, e.g. --molecules lih,ch4,c2h6,c4h4).\n\n";
  else if (sizes.size() == 2)  // (a user audit read N^-0.09 from H2 and LiH as a finding)
    o << "From 2 sizes: a slope between two sizes says nothing of its curvature, and the fixed costs of small "
         "molecules flatten it; profile three or more sizes (e.g. --molecules lih,ch4,c2h6,c4h4).\n\n";
  else
    o << "± is the exponent's standard error from the fit's residuals; a large one, or a curve through the points "
         "in scaling.png, says the sizes are not yet in one regime (fixed costs of small molecules).\n\n";
  o << "| stage | p (time) | p (peak memory) |\n|---|---|---|\n";
  const auto exponent = [](const PowerLaw& f) {  // (+ 0.0: a fit of −0.001 reads 0.00, not −0.00)
    if (!std::isfinite(f.exponent)) return std::string("–");
    std::string t = strfmt("%.2f", std::round(f.exponent * 100) / 100 + 0.0);
    if (std::isfinite(f.exponent_err)) t += strfmt(" ± %.2f", f.exponent_err);
    return t;
  };
  for (const auto& [s, f] : r.time_scaling) {
    const auto mem = r.memory_scaling.find(s);
    o << "| " << s << " | " << exponent(f) << " | "
      << (mem != r.memory_scaling.end() ? exponent(mem->second) : std::string("–")) << " |\n";
  }
  o << "\n## Plots\n\n";
  if (plot_note.empty())
    o << "![stage times](stage_bars.png)\n\n![operator mix](op_mix.png)\n\n![roofline](roofline.png)\n\n"
         "![scaling](scaling.png)\n";
  else
    o << "Not made: " << plot_note << ".\n";
  io::write_text_atomically(path, o.str());
}

}  // namespace

std::vector<std::string> timing_warnings(const ProfileReport& r, double load, unsigned cores) {
  std::vector<std::string> out;
  if (r.options.iterations < 3)
    out.push_back(strfmt("only %d timed iteration%s per molecule: too few to judge a median by its spread; time 10 "
                         "or more (--iterations)",
                         r.options.iterations, r.options.iterations == 1 ? "" : "s"));
  for (const auto& m : r.molecules)
    if (const double spread = relative_spread(m.iteration_series); spread > 0.25)
      out.push_back(strfmt("%s: iteration times spread by %.0f%% of their median: a busy machine? more --iterations "
                           "steady the medians",
                           m.molecule.c_str(), 100.0 * spread));
  // (the load counts this profile's own threads too: others must have added at least one)
  if (std::isfinite(load) && cores > 0 && load > cores && load - r.threads >= 1.0)
    out.push_back(strfmt("the load average (%.2f) exceeded the %u cores: other processes shared them, so the times "
                         "are slower and noisier than on an idle machine, and so is the roofline",
                         load, cores));
  return out;
}

void write_profile_outputs(const ProfileReport& report, const std::string& dir, bool plots) {
  fs::create_directories(dir);
  // A previous profile's plots would stand beside a report that no longer shows them (a new
  // report says which it has); only the names this command writes are removed.
  std::error_code ec;
  for (const char* plot : kProfilePlotFiles) fs::remove(fs::path(dir) / plot, ec);
  const nlohmann::json j = to_json(report);
  io::write_text_atomically(dir + "/profile.json", json_text(j, 2) + "\n");
  write_h5(report, dir + "/profile.h5", j);
  std::string note;
  if (!plots) note = "plots disabled (--no-plots)";
  else if (!run_python_script("plot_profile.py", {dir}, dir + "/plot.log", note) && note.empty())
    note = "the plotting script failed";
  if (!note.empty() && plots) log::warn("plots: " + note);  // (not for what --no-plots asked)
  write_report(report, dir + "/report.md", note);
}

}  // namespace nnvmc::profile
