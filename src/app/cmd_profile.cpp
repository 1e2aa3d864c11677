/// nnvmc profile CONFIG [--molecules lih,ch4,c2h6,c4h4] [--iterations N] [--warmup W]
///                      [--profile-iterations P] [--output DIR] [--no-roofline] [--no-plots] [key=value ...]
#include <cmath>
#include <iostream>
#include <filesystem>
#include <sstream>

#include "app/commands.hpp"
#include "app/run_args.hpp"
#include "core/errors.hpp"
#include "core/log.hpp"
#include "parallel/communicator.hpp"
#include "profile/profile.hpp"
#include "train/trainer.hpp"

namespace nnvmc::app {

namespace {

struct ProfileArgs {
  std::vector<std::string> args;
  std::string molecules;
  profile::ProfileOptions options;
  bool no_roofline = false, no_plots = false;
};

/// The entries of `--molecules a,b,...`, blanks trimmed; commas inside brackets belong to an inline
/// atom list (`[[H,0,0,0],[H,0,0,1.4]]`).
/// @throws InputError for an empty entry between commas ("he,,h2": a name left out?)
std::vector<std::string> split_molecule_list(const std::string& text) {
  std::vector<std::string> out;
  std::string item;
  int depth = 0;
  int empty = 0;  // entries with nothing in them (a trailing comma is one too)
  const auto flush = [&] {
    const auto first = item.find_first_not_of(" \t"), last = item.find_last_not_of(" \t");
    if (first != std::string::npos) out.push_back(item.substr(first, last - first + 1));
    else ++empty;
    item.clear();
  };
  for (char c : text) {
    depth += c == '[' || c == '{' ? 1 : c == ']' || c == '}' ? -1 : 0;
    if (c == ',' && depth <= 0) flush();
    else item += c;
  }
  flush();
  if (empty > 0 && !out.empty())
    throw InputError("profile: --molecules '" + text + "' has an empty entry between commas (a molecule left out?)");
  return out;
}

void run_profile_command(ProfileArgs& a) {
  if (parallel::world().size() > 1)  // its figures are one process's: each rank would time its share and write the same files
    throw InputError(strfmt("profile: runs as one process (it characterises one process's stages), not under mpirun "
                            "with %d ranks", parallel::world().size()));
  const RunArgs ra = split_run_args(a.args);
  if (ra.file.empty()) throw InputError("profile: give a run CONFIG file");
  for (const auto& m : split_molecule_list(a.molecules)) a.options.molecules.push_back(m);
  if (!a.molecules.empty() && a.options.molecules.empty())
    throw InputError("profile: --molecules '" + a.molecules + "' names no molecule (give e.g. --molecules lih,ch4)");
  if (a.options.output.empty())
    a.options.output = "runs/profile_" + std::filesystem::path(ra.file).stem().string();
  a.options.roofline = !a.no_roofline;
  // Ctrl-C stops the profile at an iteration's end (run_profile then removes what it made)
  Trainer::install_signal_handlers();
  a.options.write_outputs = true;
  a.options.plots = !a.no_plots;
  const profile::ProfileReport r = profile::run_profile(ra.file, ra.overrides, a.options);
  // The result on stdout (the log, on stderr, may be silenced with --log-level warn).
  for (const auto& m : r.molecules) {
    // Each stage's share of the stages' time (their medians, each taken on its own, need not add
    // up to the iteration's median: a user audit read 79 % and 112 % as a bug), and the stages'
    // median share of the iteration beside it.
    const auto stages = profile::top_level_stages(m);
    double stage_total = 0;
    for (const auto& s : stages) stage_total += m.stages.at(s).seconds;
    // (worded as shares of the stages' time: report.md gives each stage's share of the iteration,
    // and the two read as one disagreed, a user audit)
    std::string line = strfmt("%-8s N=%-3d %.4f s/iteration, %.0f%% of it in stages; of the stages' time:",
                              m.molecule.c_str(), m.n_electrons, m.iteration_seconds, 100.0 * m.stage_share);
    for (const auto& s : stages)
      line += strfmt(" %s %.0f%%", s.c_str(), stage_total > 0 ? 100.0 * m.stages.at(s).seconds / stage_total : 0.0);
    std::cout << line << "\n";
  }
  for (const auto& w : r.warnings) std::cout << "warning: " << w << "\n";
  if (r.roofline.peak_gflops > 0)
    std::cout << strfmt("roofline: %.1f GFLOP/s GEMM, %.1f GB/s triad (ridge %.2f FLOP/byte)\n", r.roofline.peak_gflops,
                        r.roofline.bandwidth_gbs, r.roofline.ridge());
  const auto it = r.time_scaling.find("iteration");
  if (it != r.time_scaling.end() && std::isfinite(it->second.exponent))
    std::cout << strfmt("iteration time ~ N^%.2f%s over %d molecules%s\n", it->second.exponent,
                        std::isfinite(it->second.exponent_err) ? strfmt(" ± %.2f", it->second.exponent_err).c_str() : "",
                        it->second.points,
                        it->second.points < 3 ? " (two points: a slope through them, with no uncertainty; the fixed "
                                                "costs of small molecules flatten it)"
                                              : "");
  std::cout << "report: " << a.options.output << "/report.md" << std::endl;
}

}  // namespace

void add_profile_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("profile", "Time each stage of a training iteration, operator mix, roofline, scaling");
  auto a = std::make_shared<ProfileArgs>();
  cmd->add_option("args", a->args, "CONFIG.yaml followed by key.path=value overrides");
  cmd->add_option("--molecules", a->molecules, "comma-separated molecules (default: the config's)")
      ->check([](const std::string& v) {  // (an empty value used to fall back to the config's molecule)
        return split_molecule_list(v).empty() ? "names no molecule (give e.g. --molecules lih,ch4)" : "";
      });
  cmd->add_option("--iterations", a->options.iterations, "timed iterations per molecule (medians)")
      ->capture_default_str()
      ->check(integer_in(1, 1000000));
  cmd->add_option("--warmup", a->options.warmup, "warm-up iterations per molecule (at least 1)")
      ->capture_default_str()
      ->check(integer_in(1, 1000000));
  cmd->add_option("--profile-iterations", a->options.profiled, "iterations under the operator profiler")
      ->capture_default_str()
      ->check(integer_in(0, 1000000));
  cmd->add_option("--output", a->options.output, "output directory (default runs/profile_<config>)")
      ->check([](const std::string& v) {  // (an empty value used to fall back to the default directory)
        return v.empty() ? "is empty (give a directory, or leave --output out for runs/profile_<config>)" : "";
      });
  cmd->add_flag("--no-roofline", a->no_roofline, "skip the GEMM / triad measurement");
  cmd->add_flag("--no-plots", a->no_plots, "do not run the plotting script");
  cmd->callback([a] { run_profile_command(*a); });
}

}  // namespace nnvmc::app
