#include "parallel/communicator.hpp"
#include "compare/reference.hpp"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "ccsd/driver.hpp"
#include "core/errors.hpp"
#include "core/log.hpp"
#include "io/hdf5_file.hpp"
#include "core/json_text.hpp"

namespace nnvmc::compare {
namespace fs = std::filesystem;

namespace {

/// A molecule's geometry and electrons as text: a cached reference is reused only for the same.
std::string fingerprint(const System& s) {
  std::ostringstream o;
  o.precision(12);
  o << "charge " << s.charge << " spin " << s.spin;
  for (const auto& a : s.atoms) o << " | " << a.Z << " " << a.position[0] << " " << a.position[1] << " " << a.position[2];
  return o.str();
}

nlohmann::json read_cache(const std::string& path) {
  std::ifstream in(path);
  if (!in) return nlohmann::json::object();
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception&) {
    return nlohmann::json::object();  // a damaged cache is recomputed
  }
}

Reference ccsd_t_reference(const System& system, const std::string& basis) {
  Reference r;
  r.kind = "ccsd_t";
  if (system.n_up() != system.n_down()) {
    r.kind = "none";
    r.label = "no CCSD(T) reference: open shell (nnvmc's CCSD is closed-shell)";
    return r;
  }
  log::info(strfmt("reference for %s: CCSD(T)/%s ...", system.name.c_str(), basis.c_str()));
  ccsd::CcsdRunOptions o;
  o.basis = basis;
  o.ccsd.triples = true;
  const auto t0 = std::chrono::steady_clock::now();
  ccsd::CcsdRun run;
  try {
    run = ccsd::run_ccsd(system, o);
  } catch (const InputError& e) {
    throw ConfigError(std::string("'reference_basis': ") + e.what());
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.energy = run.cc.e_ccsd_t;
  r.label = "CCSD(T)/" + basis + " (nnvmc ccsd)";
  return r;
}

}  // namespace

std::vector<Reference> compute_references(const CompareSpec& spec) {
  const std::string cache_path = spec.output + "/references.json";
  nlohmann::json cache = read_cache(cache_path);
  std::vector<Reference> out;
  for (const auto& m : spec.molecules) {
    Reference r;
    const bool use_file = spec.references == ReferenceMode::exact ||
                          (spec.references == ReferenceMode::automatic && m.system.e_ref);
    if (use_file) {
      r.kind = "e_ref";
      r.energy = *m.system.e_ref;
      r.label = m.system.e_ref_source.empty() ? "molecule file e_ref" : m.system.e_ref_source;
    } else {
      const auto& c = cache[m.label];
      const bool cached = c.is_object() && c.value("fingerprint", "") == fingerprint(m.system) &&
                          c.value("basis", "") == spec.reference_basis && c.value("kind", "") != "";
      // Each rank read the cache itself (an output on node-local disks, or a stale network
      // view, may differ): the CCSD below is a collective, so all ranks run it if one must.
      if (!parallel::world().any(!cached)) {
        r.kind = c["kind"];
        r.label = c["label"];
        r.energy = c["energy"].is_number() ? c["energy"].get<double>() : r.energy;
        r.seconds = c.value("seconds", 0.0);
      } else {
        r = ccsd_t_reference(m.system, spec.reference_basis);
        cache[m.label] = {{"fingerprint", fingerprint(m.system)}, {"basis", spec.reference_basis},
                          {"kind", r.kind}, {"label", r.label}, {"seconds", r.seconds}};
        cache[m.label]["energy"] = std::isfinite(r.energy) ? nlohmann::json(r.energy) : nlohmann::json();
        if (parallel::world().is_root()) {  // under mpirun every rank computed it (CCSD is shared out)
          fs::create_directories(spec.output);
          io::write_text_atomically(cache_path, json_text(cache, 2) + "\n");
        }
      }
    }
    log::info(strfmt("reference %-10s %s  (%s)", m.label.c_str(),
                     std::isfinite(r.energy) ? strfmt("%.6f Eh", r.energy).c_str() : "none", r.label.c_str()));
    out.push_back(r);
  }
  return out;
}

}  // namespace nnvmc::compare
