#pragma once
/// @file summary.hpp
/// summary.json of a run: final energy estimate, settings and per-stage timings.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/timer.hpp"
#include "models/hartree_fock_energy.hpp"
#include "train/evaluate.hpp"

namespace nnvmc {

/// The units of a run's numbers, stated in summary.json (`units`) and as result.h5's `units`
/// attribute (a user audit found them only in compare's files).
inline constexpr const char* kResultUnits =
    "energies (energy, energy_err*, e_ref, error_vs_ref, e_hf*, drift_*) in Eh (hartree), variance in Eh^2, "
    "step_size in bohr, autocorrelation times in evaluation iterations (steps_per_iteration MH steps each), "
    "burn_in in MH steps, seconds in s";

/// JSON object of an evaluation: energy, energy_err, error_plateau, the batch-means and
/// autocorrelation cross-checks, variance, autocorr_time, step_size, excluded samples, steps, walkers.
nlohmann::json eval_json(const EvalResult& r);

/// Human-readable lines of an evaluation (energy ± error, the cross-checks, and a warning when
/// the stated error bar is unreliable — a reblocking without plateau, or the spread of fewer than
/// kMinWalkersForChainsError walkers — or samples were excluded).
std::string eval_text(const EvalResult& r);

/// Logs eval_text(r) one log line per line: its warnings at warn, the rest at info (for runs
/// whose result is read in a log, e.g. a comparison's cell; `nnvmc train` prints it on stdout).
void log_eval_text(const EvalResult& r);

/// The molecule a result belongs to: n_electrons, charge, spin and `atoms_bohr`, its nuclei as
/// [symbol, x, y, z] in bohr (so a result of a scan or dataset states its geometry).
nlohmann::json molecule_json(const System& s);

/// Per-stage seconds and call counts.
nlohmann::json timers_json(const StageTimers& t);

/// Writes summary.json (atomically) for a finished training run: `molecules`, a list with one
/// object per molecule (its name under "molecule", the eval_json keys, n_electrons); a run of one
/// molecule also has that molecule's keys at the top level (the one-molecule shape of earlier
/// versions). Then model, iterations, laplacian, dtype, timings; `extra` keys are added.
/// @param evals one evaluation per molecule of the setup, in order
/// @param e_hf per molecule, the Hartree–Fock energy the final energy is checked against
/// (`e_hf`, `e_hf_source`: pretraining's target or the ansatz's baseline; none when empty or NaN)
void write_summary(const std::string& path, const VmcSetup& setup, const std::vector<EvalResult>& evals,
                   const StageTimers& timers, std::int64_t iterations,
                   const nlohmann::json& extra = nlohmann::json::object(),
                   const std::vector<HartreeFockEnergy>& e_hf = {});

}  // namespace nnvmc
