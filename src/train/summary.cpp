#include "train/summary.hpp"

#include <fstream>

#include "io/hdf5_file.hpp"

namespace nnvmc {

nlohmann::json eval_json(const EvalResult& r) {
  return {{"energy", r.stats.mean},
          {"energy_err", r.stats.error},
          {"energy_err_naive", r.stats.naive_error},
          {"autocorr_time", r.stats.autocorr_time},
          {"variance", r.variance},
          {"acceptance", r.acceptance},
          {"steps", r.steps},
          {"walkers", r.walkers}};
}

nlohmann::json timers_json(const StageTimers& t) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [stage, e] : t.stages()) j[stage] = {{"seconds", e.seconds}, {"calls", e.calls}};
  return j;
}

void write_summary(const std::string& path, const VmcSetup& setup, const EvalResult& eval,
                   const StageTimers& timers, std::int64_t iterations) {
  nlohmann::json j = eval_json(eval);
  j["molecule"] = setup.system.name;
  j["model"] = setup.config.model.type;
  j["iterations"] = iterations;
  j["laplacian"] = setup.config.hamiltonian.laplacian;
  j["dtype"] = setup.config.run.dtype;
  j["timings"] = timers_json(timers);
  const std::string tmp = path + ".tmp";
  std::ofstream(tmp) << j.dump(2) << "\n";
  io::rename_into_place(tmp, path);
}

}  // namespace nnvmc
