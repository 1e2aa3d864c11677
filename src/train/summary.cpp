#include "train/summary.hpp"

#include <cmath>
#include <fstream>

#include "core/elements.hpp"
#include "core/log.hpp"
#include "io/hdf5_file.hpp"
#include "parallel/communicator.hpp"
#include "core/json_text.hpp"

namespace nnvmc {

nlohmann::json eval_json(const EvalResult& r) {
  return {{"energy", r.stats.mean},
          {"energy_err", r.stats.error},
          {"error_plateau", r.stats.plateau},
          {"error_method", r.error_method},
          {"error_reliable", r.error_reliable()},
          {"energy_err_walkers", r.error_walkers},
          {"energy_err_reblocking", r.error_reblocking},
          {"energy_err_naive", r.stats.naive_error},
          {"energy_err_batch_means", r.error_batch_means},
          {"energy_err_autocorr", r.autocorr.error},
          {"energy_err_independent", r.error_independent},
          {"error_floored", r.error_floored},
          {"autocorr_time", r.stats.autocorr_time},
          {"autocorr_time_window", r.autocorr.tau},
          {"autocorr_times_in_series", r.autocorr_times_in_series},
          {"autocorr_time_walkers", r.autocorr_walkers.tau},
          {"energy_err_autocorr_walkers", r.autocorr_walkers.error},
          {"variance", r.variance},
          {"variance_rel_error", r.variance_rel_error},
          {"variance_rel_error_independent", r.variance_rel_error_independent},
          {"variance_error_widened", r.variance_error_widened},
          {"variance_largest_share", r.largest_share},
          {"heavy_tails", r.heavy_tails()},
          {"laplacian", r.laplacian},
          {"drift_z", r.drift_z},
          {"drift_first", r.drift_first},
          {"drift_last", r.drift_last},
          {"walkers_apart", r.walkers_apart()},
          {"burn_in_short", r.short_burn_in()},
          {"fresh_walkers", r.fresh_walkers},
          {"walkers_copied_from", r.walkers_copied_from > 0 ? nlohmann::json(r.walkers_copied_from) : nlohmann::json()},
          {"copies_not_apart", r.copies_not_apart()},
          {"lower_bound", r.lower_bound},
          {"below_lower_bound", r.below_lower_bound()},
          {"burn_in", r.burn_in},
          {"acceptance", r.acceptance},
          {"step_size", r.step_size},
          {"excluded_samples", r.excluded},
          {"steps", r.steps},
          {"walkers", r.walkers},
          {"e_ref", r.e_ref ? nlohmann::json(*r.e_ref) : nlohmann::json()},
          {"e_ref_source", r.e_ref ? nlohmann::json(r.e_ref_source) : nlohmann::json()},
          {"error_vs_ref", r.e_ref ? nlohmann::json(r.stats.mean - *r.e_ref) : nlohmann::json()}};
}

nlohmann::json molecule_json(const System& s) {
  nlohmann::json atoms = nlohmann::json::array();
  for (const auto& a : s.atoms) atoms.push_back({element_symbol(a.Z), a.position[0], a.position[1], a.position[2]});
  // (charge and spin: H2+ is not H2; the geometry: the points of a scan share one name stem)
  return {{"n_electrons", s.n_electrons()}, {"charge", s.charge}, {"spin", s.spin}, {"atoms_bohr", atoms}};
}

namespace {
/// "1 step x 8 walkers", "200 steps x 1 walker".
std::string steps_and_walkers(int steps, int walkers) {
  return strfmt("%d step%s x %d walker%s", steps, steps == 1 ? "" : "s", walkers, walkers == 1 ? "" : "s");
}
}  // namespace

std::string eval_text(const EvalResult& r) {
  const bool reblocked = r.error_method == "reblocking";
  const bool one_sample = static_cast<long long>(r.steps) * r.walkers - r.excluded <= 1;  // (no error bar, variance or τ)
  // (a user audit: train and eval never showed the reference the molecule file carries)
  const std::string reference =
      r.e_ref ? strfmt("reference %.6f Eh%s: E − E_ref = %+.2f%s mEh\n", *r.e_ref,
                       r.e_ref_source.empty() ? "" : (" (" + r.e_ref_source + ")").c_str(),
                       1e3 * (r.stats.mean - *r.e_ref),
                       one_sample || !std::isfinite(r.stats.error) ? "" : strfmt(" ± %.2f", 1e3 * r.stats.error).c_str())
              : std::string();
  if (one_sample)
    return strfmt("energy   %.6f Eh  (one sample: no error bar)\n", r.stats.mean) + reference +
           strfmt("acceptance %.2f at step size %.4f bohr\n%s\n"
                  "note: one sample has no error bar or variance: evaluate with more steps or walkers\n",
                  r.acceptance, r.step_size, steps_and_walkers(r.steps, r.walkers).c_str());
  std::string s = strfmt("energy   %.6f ± %.6f Eh%s%s\n", r.stats.mean, r.stats.error,
                         reblocked ? "" : "  (from the walkers' averages)",
                         r.error_reliable() ? "" : "  (UNRELIABLE: see below)");
  s += reference;
  const auto value = [](double x) { return std::isfinite(x) ? strfmt("%.6f", x) : std::string("n/a (too short)"); };
  // (the walkers' averages need two walkers, not a longer series)
  const std::string first_check = reblocked && r.walkers < 2 ? std::string("n/a (one walker)")
                                                             : value(reblocked ? r.error_walkers : r.error_reblocking);
  s += strfmt("         error cross-checks: %s ± %s, batch means ± %s, autocorrelation ± %s\n",
              reblocked ? "walker averages" : r.stats.plateau ? "reblocking" : "reblocking (no plateau)",
              first_check.c_str(), value(r.error_batch_means).c_str(),
              value(r.autocorr.error).c_str());
  // (a user audit took a reblocking 1.7x below the walkers' spread, which matched the spread of
  // eight seeds, as a confirmation: reblocking runs low on short or strongly correlated series)
  if (!reblocked && std::isfinite(r.error_reblocking) && r.error_reblocking > 0 &&
      r.error_reblocking < r.stats.error / 1.5 && !r.walkers_apart())
    s += strfmt("         (the reblocking is %.1f times below the stated error: it runs low on series this short or "
                "correlated; the walkers' spread is the estimate to use)\n",
                r.stats.error / r.error_reblocking);
  // (a user audit read the Hutchinson estimator's variance, 8.5 against 0.13, as the local energy's)
  s += strfmt("variance %.5g Eh²%s%s\n", r.variance,
              std::isfinite(r.variance_rel_error)  // (two digits below 10 %: Gaussian tails read "± 0 %", a review)
                  ? (strfmt(100 * r.variance_rel_error < 10 ? " ± %.2g %%" : " ± %.0f %%", 100 * r.variance_rel_error) +
                     (r.variance_error_widened ? "" : " (samples counted as independent: τ not known)")).c_str()
                  : "",
              r.laplacian == "hutchinson" ? "  (of the Hutchinson estimates: the local energy's plus the probes' noise)" : "");
  s += strfmt("autocorrelation time %s iterations (%s), acceptance %.2f at step size %.4f bohr\n",
              std::isfinite(r.stats.autocorr_time) ? strfmt("%.2f", r.stats.autocorr_time).c_str() : "n/a",
              !reblocked        ? "from the walkers' averages"
              : r.stats.plateau ? "the largest of the reblocking's and the Sokal windows'"
                                : "the Sokal windows': the reblocking found no plateau",
              r.acceptance, r.step_size);
  s += steps_and_walkers(r.steps, r.walkers) + "\n";
  if (r.below_lower_bound())
    s += strfmt("warning: the energy is below %.6f Eh, a rigorous lower bound on the energy of any wavefunction of "
                "this molecule (the electrons without their repulsion, in a hydrogen-like field of all nuclear charge): "
                "the walkers did not sample |psi|^2 and the number is meaningless. A training that diverged (a too large optim.lr) "
                "leaves such a wavefunction; start it again with a smaller learning rate\n",
                r.lower_bound);
  if (!reblocked && !r.stats.plateau && r.walkers < kMinWalkersForChainsError)
    s += strfmt("note: %ld step(s) are too few for a reblocking plateau; the error bar is the spread of the %d walkers' "
                "own averages, which with fewer than %d walkers is itself uncertain by about %.0f %%: evaluate with "
                "more steps or walkers\n",
                r.stats.n, r.walkers, kMinWalkersForChainsError,
                100.0 / std::sqrt(2.0 * std::max(r.walkers - 1, 1)));
  else if (reblocked && !r.stats.plateau)
    s += strfmt("warning: no block size passed the reblocking plateau test (%ld values, window estimate of the "
                "autocorrelation time %s): the error bar is likely too small; evaluate with more steps or walkers\n",
                r.stats.n, std::isfinite(r.autocorr.tau) ? strfmt("%.1f", r.autocorr.tau).c_str() : "n/a");
  if (reblocked && r.stats.plateau && r.series_too_short())  // (without a plateau, the warning above)
    s += strfmt("warning: the %ld iterations hold only %.0f autocorrelation times (τ %.1f iterations); a reblocking "
                "error bar needs %.0f, and a shorter series finds its plateau mostly where the block errors came out "
                "low: the error bar may be too small; evaluate with more steps, or with %d walkers or more (their "
                "own averages give the error bar at any length)\n",
                r.stats.n, r.autocorr_times_in_series, double(r.stats.n) / r.autocorr_times_in_series,
                kMinAutocorrTimesInSeries, kMinWalkersForChainsError);
  if (reblocked && r.error_from_walker_spread && !r.error_floored)
    s += strfmt("note: the error bar is the spread of the %d walkers' own averages, larger than the reblocking's "
                "± %s\n",
                r.walkers, value(r.error_reblocking).c_str());
  if (reblocked && r.error_from_window && !r.error_floored)
    s += strfmt("note: the error bar is the autocorrelation-time estimate (Sokal's window%s), larger than the "
                "reblocking's ± %s\n",
                r.walkers > 1 && r.stats.error == r.autocorr_walkers.error ? ", pooled over the walkers' own series" : "",
                value(r.error_reblocking).c_str());
  if (r.drifting())
    s += strfmt("warning: the energy drifts during the evaluation: its first %.0f %% of steps average %.6f, its last "
                "%.0f %% %.6f, %.1f times their combined error apart: the walkers were not in equilibrium when it "
                "began, and the energy is biased; raise eval.burn_in (heavy atoms take thousands of steps: the "
                "step size adapts to the core electrons)\n",
                100 * kDriftFirstFraction, r.drift_first, 100 * kDriftLastFraction, r.drift_last, std::fabs(r.drift_z));
  if (r.walkers_apart())
    s += strfmt("warning: the walkers do not mix: their own averages spread by ± %.6f, %.1f times the reblocking error "
                "%.6f of their mean series: some keep to regions of their own (nodal pockets, a trap), and the "
                "energy depends on where they started; evaluate longer, with more walkers, or check the "
                "wavefunction\n",
                r.error_walkers, r.error_walkers / r.error_reblocking, r.error_reblocking);
  if (r.heavy_tails())
    s += strfmt("warning: a few large local energies carry the variance (heavy tails; the largest of %lld samples "
                "carries %.0f %% of it): the variance is uncertain by about ± %.0f %% and the error bar by half that, "
                "and a longer run that meets more such values may find both larger; evaluate with more steps\n",
                static_cast<long long>(r.steps) * r.walkers - r.excluded, 100 * r.largest_share,
                100 * r.variance_rel_error);
  if (r.copies_not_apart())
    s += strfmt("warning: the %d walkers started as repeated copies of the checkpoint's %lld, and after a burn-in of "
                "%d MH steps (%d by default for copies) a copy and its original are not yet independent chains: the "
                "spread of the walkers' averages, which counts each as one, makes the error bar too small; evaluate "
                "with eval.burn_in=%d or more, or with --walkers %lld or fewer\n",
                r.walkers, static_cast<long long>(r.walkers_copied_from), r.burn_in, kMinFreshWalkersBurnIn,
                kMinFreshWalkersBurnIn, static_cast<long long>(r.walkers_copied_from));
  // (a drift is the measured symptom, with its own advice; walkers apart inflate the walkers' τ)
  if (r.short_burn_in() && !r.drifting() && !r.walkers_apart())
    s += strfmt("warning: the burn-in (%d MH steps) was shorter than the autocorrelation time (%.0f MH steps): "
                "walkers that were not in equilibrium with this wavefunction (%s) may not have reached it, and the "
                "energy may be biased high; evaluate with eval.burn_in=%.0f or more\n",
                r.burn_in, r.stats.autocorr_time * r.steps_per_iteration,
                r.fresh_walkers ? "not from training: placed around the nuclei, or by pretraining"
                                : "from training that has since moved it",
                std::ceil(kSuggestedBurnInAutocorrTimes * r.stats.autocorr_time * r.steps_per_iteration));
  if (r.hardly_moved())
    s += strfmt("warning: acceptance %.3f at step size %.4f: the walkers hardly moved while measuring, and the energy "
                "still reflects where they started; give eval.burn_in steps to adapt the step size\n",
                r.acceptance, r.step_size);
  if (r.error_floored)
    // (the stated estimate is named: the cross-checks above may lie above the floor, a user audit)
    s += strfmt("note: the error from the %s (%s) fell below √(variance / samples) = %.6f, the error of %lld "
                "independent samples, which correlated samples cannot beat: that is the error bar given\n",
                reblocked ? "reblocking" : "walkers' averages",
                value(reblocked ? r.error_reblocking : r.error_walkers).c_str(), r.error_independent,
                static_cast<long long>(r.steps) * r.walkers - r.excluded);
  if (r.laplacian == "hutchinson")
    // (a user audit: a Hutchinson evaluation's error bar was 9× an exact Laplacian's, with no hint)
    s += "note: the Hutchinson estimator adds its probes' noise to every local energy: an exact Laplacian "
         "(nnvmc eval DIR hamiltonian.laplacian=forward) measures the same energy with a smaller error bar\n";
  if (r.excluded > 0)
    s += strfmt("warning: %ld sample(s) with a non-finite local energy were left out\n", static_cast<long>(r.excluded));
  return s;
}

void log_eval_text(const EvalResult& r) {
  for (std::string text = eval_text(r); !text.empty();) {
    const auto nl = text.find('\n');
    const std::string line = text.substr(0, nl);
    if (line.rfind("warning: ", 0) == 0) log::warn(line.substr(9));  // (the logger says "warning")
    else log::info(line);
    text = nl == std::string::npos ? "" : text.substr(nl + 1);
  }
}

nlohmann::json timers_json(const StageTimers& t) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [stage, e] : t.stages()) j[stage] = {{"seconds", e.seconds}, {"calls", e.calls}};
  return j;
}

void write_summary(const std::string& path, const VmcSetup& setup, const std::vector<EvalResult>& evals,
                   const StageTimers& timers, std::int64_t iterations, const nlohmann::json& extra,
                   const std::vector<HartreeFockEnergy>& e_hf) {
  nlohmann::json list = nlohmann::json::array();
  for (std::size_t i = 0; i < evals.size() && i < setup.molecules.size(); ++i) {
    nlohmann::json m = {{"molecule", setup.molecules[i].name()}};
    m.update(eval_json(evals[i]));
    m.update(molecule_json(setup.molecules[i].system));
    // the Hartree-Fock energy the final energy is checked against, and what it is
    if (i < e_hf.size() && std::isfinite(e_hf[i].energy)) {
      m["e_hf"] = e_hf[i].energy;
      m["e_hf_source"] = e_hf[i].source;
    }
    list.push_back(std::move(m));
  }
  nlohmann::json j = list.size() == 1 ? list[0] : nlohmann::json::object();
  j["molecules"] = list;
  j["model"] = setup.config.model.type;
  j["iterations"] = iterations;
  j["laplacian"] = setup.config.hamiltonian.laplacian;
  j["dtype"] = setup.config.run.dtype;
  j["timings"] = timers_json(timers);  // (rank 0's, waits for other ranks in collectives included)
  // (the processes it ran on, and of rank 0's time the part spent in collectives, waiting included:
  // the timings alone could not be read later, a user audit)
  j["ranks"] = parallel::world().size();
  if (parallel::world().size() > 1) j["seconds_in_collectives"] = parallel::world().seconds_in_collectives();
  // (the checkpoint a fine-tuning started from: config.yaml alone had it)
  if (!setup.config.model.init_from.empty()) j["init_from"] = setup.config.model.init_from;
  j["units"] = kResultUnits;
  for (const auto& [k, v] : extra.items()) j[k] = v;
  io::write_text_atomically(path, json_text(j, 2) + "\n");
}

}  // namespace nnvmc
