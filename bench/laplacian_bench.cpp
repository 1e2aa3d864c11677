/// Time and peak memory per local-energy evaluation for each Laplacian method.
/// usage: bench_laplacian [--molecules lih,ch4] [--walkers 256] [--dtype float64]
///                        [--methods jvp,reverse,hutchinson] [--width default|small] [--repeats 3]
/// Prints one row per (molecule, method): median seconds, ratio to jvp in the same run,
/// and the mean local energy (so methods can be compared on the same walkers).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/log.hpp"
#include "train/setup.hpp"

using namespace nnvmc;

namespace {
std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, ',');) out.push_back(x);
  return out;
}
/// Peak resident set size of this process (kB), from /proc/self/status.
long peak_rss_kb() {
  std::ifstream f("/proc/self/status");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}
void reset_peak_rss() { std::ofstream("/proc/self/clear_refs") << "5"; }
}  // namespace

int main(int argc, char** argv) {
  std::string molecules = "lih", methods = "jvp,reverse,hutchinson", dtype = "float64", width = "default";
  int walkers = 256, repeats = 3, threads = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--molecules") molecules = v;
    else if (k == "--methods") methods = v;
    else if (k == "--dtype") dtype = v;
    else if (k == "--walkers") walkers = std::stoi(v);
    else if (k == "--repeats") repeats = std::stoi(v);
    else if (k == "--width") width = v;
    else if (k == "--threads") threads = std::stoi(v);
  }
  std::printf("%-6s %-11s %5s %8s %10s %9s %11s %14s\n", "mol", "method", "N", "walkers",
              "median_s", "vs_jvp", "peak_MiB", "mean_E_L");
  for (const auto& mol : split(molecules)) {
    double t_jvp = 0;
    for (const auto& method : split(methods)) {
      Config c = parse_config("", {}, "bench");
      c.system.molecule.yaml = mol;
      c.sampler.walkers = walkers;
      c.run.dtype = dtype;
      c.run.threads = threads;
      c.hamiltonian.laplacian = method;
      if (width == "small") c.model.ferminet.hidden_dims.assign(3, {32, 8}), c.model.ferminet.determinants = 4;
      VmcSetup s = make_setup(c);
      s.sampler->initialize(s.logabs_fn());
      s.sampler->run(s.logabs_fn(), 20);
      const auto r = s.sampler->positions();
      std::vector<double> times;
      double mean_e = 0;
      reset_peak_rss();
      for (int k = 0; k < repeats; ++k) {
        const auto t0 = std::chrono::steady_clock::now();
        const auto e = (*s.local_energy)(*s.wf, r).energy;
        times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        mean_e = e.mean().item<double>();
      }
      std::sort(times.begin(), times.end());
      const double med = times[times.size() / 2];
      if (method == "jvp") t_jvp = med;
      std::printf("%-6s %-11s %5d %8d %10.4f %9.2f %11.1f %14.8f\n", mol.c_str(), method.c_str(),
                  s.system.n_electrons(), walkers, med, t_jvp > 0 ? med / t_jvp : 0.0,
                  peak_rss_kb() / 1024.0, mean_e);
      std::fflush(stdout);
    }
  }
  return 0;
}
