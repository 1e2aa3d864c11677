/// Time and peak memory per local-energy evaluation for each Laplacian method.
/// usage: bench_laplacian [--molecules lih,ch4] [--walkers 256] [--dtype float64]
///                        [--methods jvp,reverse,hutchinson,forward] [--width default|small] (default: published [[256,32]]x4, 16 dets)
///                        [--repeats 3] [--threads 1] [--chunk 0] [--budget auto]
///                        [--timed-walkers W] [--device cpu|cuda]
///                        [--model-from CONFIG.yaml] [--set "key=value key=value"]
/// Prints one row per (molecule, method): median seconds per evaluation of all walkers, ratio
/// to jvp in the same run, walkers per chunk, peak working tensor memory of an evaluation
/// (counting CPU allocator) and peak RSS, the mean and the variance of the local energy over
/// walkers (so methods can be compared on the same walkers; hutchinson's variance increase
/// shows). --chunk sets hamiltonian.chunk_walkers, --budget run.memory_budget (chunks then come
/// from the measured memory per walker). --timed-walkers W times only the first W walkers
/// (rounded up to whole chunks) and scales the time to all walkers: chunks are independent and
/// identical work, so this is a linear extrapolation, marked by timed < walkers in the output.
/// --model-from takes the model (type and options) of a run config, e.g.
/// configs/runs/lih_psiformer.yaml, and --set applies space-separated overrides to it (e.g.
/// "model.psiformer.layers=4 model.psiformer.head_dim=64"); --width applies to FermiNet (with
/// --model-from only when given; the config keeps its widths otherwise).
/// Ends with the growth exponent p of time ∝ N^p per method (least squares over molecules).
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "batching/peak_memory.hpp"
#include "bench_args.hpp"
#include "core/log.hpp"
#include "train/setup.hpp"

using namespace nnvmc;

namespace {
using bench::split_list;
/// Peak resident set size of this process (kB), from /proc/self/status.
long peak_rss_kb() {
  std::ifstream f("/proc/self/status");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}
/// Returns freed heap to the OS, then restarts the peak-RSS counter at the current RSS.
void reset_peak_rss() {
  malloc_trim(0);
  std::ofstream("/proc/self/clear_refs") << "5";
}
}  // namespace

namespace {
int run(int argc, char** argv) {
  std::string molecules = "lih", methods = "forward,jvp,reverse,hutchinson", dtype = "float64", width = "default";
  std::string budget = "auto", device = "cpu", model_from, overrides;
  int walkers = 256, repeats = 3, threads = 0, chunk = 0, timed_walkers = 0;
  bool width_given = false;
  const std::vector<std::string> known = {"--molecules", "--methods", "--dtype", "--walkers", "--repeats", "--width",
                                          "--threads", "--chunk", "--budget", "--timed-walkers", "--device",
                                          "--model-from", "--set"};
  std::string usage = "usage: bench_laplacian";
  for (const auto& k : known) usage += " [" + k + " V]";
  for (const auto& [k, v] : bench::flag_pairs(argc, argv, 1, known, usage)) {
    if (k == "--molecules") molecules = v;
    else if (k == "--methods") methods = v;
    else if (k == "--dtype") dtype = v;
    else if (k == "--walkers") walkers = std::stoi(v);
    else if (k == "--repeats") repeats = std::stoi(v);
    else if (k == "--width") width = v, width_given = true;
    else if (k == "--threads") threads = std::stoi(v);
    else if (k == "--chunk") chunk = std::stoi(v);
    else if (k == "--budget") budget = v;
    else if (k == "--timed-walkers") timed_walkers = std::stoi(v);
    else if (k == "--device") device = v;
    else if (k == "--model-from") model_from = v;
    else if (k == "--set") overrides = v;
  }
  std::vector<std::string> sets;
  {
    std::stringstream ss(overrides);
    for (std::string x; ss >> x;) sets.push_back(x);
  }
  const ModelConfig model = model_from.empty() ? parse_config("", sets, "bench").model
                                               : load_config(model_from, sets).model;
  std::printf("# model %s%s%s\n", model.type.c_str(), model_from.empty() ? "" : " from ", model_from.c_str());
  std::printf("%-6s %-11s %4s %7s %6s %6s %8s %10s %8s %9s %9s %14s %12s\n", "mol", "method", "N", "walkers",
              "timed", "chunk", "dtype", "median_s", "vs_jvp", "work_MiB", "rss_MiB", "mean_E_L", "var_E_L");
  std::map<std::string, std::vector<std::pair<double, double>>> growth;  // method → (N, s)
  for (const auto& mol : split_list(molecules)) {
    double t_jvp = 0;
    for (const auto& method : split_list(methods)) {
      Config c = parse_config("", {}, "bench");
      c.model = model;
      c.system.molecule = InlineYaml{mol};
      c.sampler.walkers = walkers;
      c.run.dtype = dtype;
      c.run.threads = threads;
      c.hamiltonian.laplacian = method;
      c.hamiltonian.chunk_walkers = chunk;
      c.run.memory_budget = budget;
      c.run.device = device;
      // "default" is the published FermiNet ([[256, 32]]x4, 16 determinants) whatever the
      // molecule (the config's own default is sized by the electron count); a --model-from
      // config keeps its own widths unless --width is given.
      if (model_from.empty() || width_given) {
        const bool small = width == "small";
        c.model.ferminet.hidden_dims = std::vector<std::array<int, 2>>(
            small ? 3 : 4, small ? std::array<int, 2>{32, 8} : std::array<int, 2>{256, 32});
        c.model.ferminet.determinants = small ? 4 : 16;
      }
      VmcSetup s = make_setup(c);
      s.molecules[0].sampler->initialize(s.logabs_fn());
      s.molecules[0].sampler->run(s.logabs_fn(), 20);
      auto r = s.molecules[0].sampler->positions();
      (*s.molecules[0].local_energy)(*s.wf, r.slice(0, 0, 1));  // warm-up; sizes the chunks from the budget
      const std::int64_t ch = s.molecules[0].local_energy->chunk() > 0 ? std::min<std::int64_t>(s.molecules[0].local_energy->chunk(), walkers) : walkers;
      std::int64_t timed = walkers;
      if (timed_walkers > 0) timed = std::min<std::int64_t>(walkers, (timed_walkers + ch - 1) / ch * ch);
      r = r.slice(0, 0, timed);
      std::vector<double> times;
      double mean_e = 0, var_e = 0;
      std::int64_t work = 0;
      reset_peak_rss();
      for (int k = 0; k < repeats; ++k) {
        batching::PeakMemoryScope scope(static_cast<int>(r.get_device()));  // CPU: -1
        const auto t0 = std::chrono::steady_clock::now();
        const auto e = (*s.molecules[0].local_energy)(*s.wf, r).energy;
        times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() *
                        double(walkers) / double(timed));
        work = std::max(work, scope.peak_bytes());
        mean_e = e.mean().item<double>();
        var_e = e.var().item<double>();
      }
      std::sort(times.begin(), times.end());
      const double med = times[times.size() / 2];
      if (method == "jvp") t_jvp = med;
      const long peak = peak_rss_kb();
      growth[method].emplace_back(s.molecules[0].system.n_electrons(), med);
      std::printf("%-6s %-11s %4d %7d %6lld %6lld %8s %10.4f %8.3f %9.1f %9.1f %14.8f %12.6g\n", mol.c_str(),
                  method.c_str(), s.molecules[0].system.n_electrons(), walkers, static_cast<long long>(timed),
                  static_cast<long long>(ch), dtype.c_str(), med, t_jvp > 0 ? med / t_jvp : 0.0,
                  double(work) / (1 << 20), peak / 1024.0, mean_e, var_e);
      std::fflush(stdout);
    }
  }
  for (const auto& [method, pts] : growth) {
    if (pts.size() < 2) continue;
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (const auto& [n, t] : pts) {
      const double x = std::log(n), y = std::log(t);
      sx += x, sy += y, sxx += x * x, sxy += x * y;
    }
    const double m = static_cast<double>(pts.size());
    std::printf("growth %-11s time ~ N^%.2f over %zu molecules\n", method.c_str(),
                (m * sxy - sx * sy) / (m * sxx - sx * sx), pts.size());
  }
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  return nnvmc::bench::guarded_main(argv[0], [&] { return run(argc, argv); });
}
