#include "parallel/communicator.hpp"
#include "compare/reference.hpp"

#include <cctype>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "batching/budget.hpp"
#include "ccsd/driver.hpp"
#include "scf/basis.hpp"
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

/// Whether a basis's name (a file's stem) says it has diffuse functions: aug-cc-pVXZ (also d-aug-),
/// ma-def2 and def2-…D (Rappoport), Pople's + (spelled p in file names: 6-31pgs.nw).
bool named_diffuse(const std::string& basis) {
  std::string stem = std::filesystem::path(scf::is_basis_path(basis) ? basis : scf::basis_file_name(basis)).stem().string();
  for (auto& c : stem) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const std::regex diffuse(R"((^|[^a-z])aug-|(^|-)ma-|\+|^[0-9]+-[0-9]+p+g|^def2-[a-z]*pd$)");
  return std::regex_search(stem, diffuse);
}

/// The label of a molecule without a CCSD(T) reference.
const char* const kOpenShellLabel = "no CCSD(T) reference: open shell (nnvmc's CCSD is closed-shell)";

Reference ccsd_t_reference(const System& system, const std::string& basis) {
  Reference r;
  r.kind = "ccsd_t";
  if (system.n_up() != system.n_down()) {
    r.kind = "none";
    r.label = kOpenShellLabel;
    return r;
  }
  log::info(strfmt("reference for %s: CCSD(T)/%s ...", system.name.c_str(), basis.c_str()));
  // An anion's extra electron lies far out: a basis without diffuse functions leaves its CCSD(T)
  // energy tens of mEh high (H- in cc-pVDZ: 58 mEh), and VMC "below the reference" (a user audit).
  if (system.charge < 0 && !named_diffuse(basis))
    log::warn(strfmt("%s is an anion, and reference_basis %s has no diffuse functions (by its name): its CCSD(T) "
                     "reference lies well above the exact energy (give an aug-, ma- or + basis, or the molecule's "
                     "e_ref)",
                     system.name.c_str(), basis.c_str()));
  ccsd::CcsdRunOptions o;
  o.basis = basis;
  o.ccsd.triples = true;
  // within a share of the free memory, measured again after the integrals (as nnvmc ccsd's
  // --memory auto; without a budget every term was planned whole, however large)
  o.ccsd.plan.budget_bytes = batching::MemoryBudget::parse("auto", "cpu", "reference_basis").bytes();
  o.memory_is_auto = o.ccsd.budget_is_auto = true;
  const auto t0 = std::chrono::steady_clock::now();
  ccsd::CcsdRun run;
  try {
    run = ccsd::run_ccsd(system, o);
  } catch (const InputError& e) {
    throw ConfigError(std::string("'reference_basis': ") + e.what());
  } catch (const NumericalError& e) {  // (every rank alike: the amplitudes are replicated)
    // e.g. a stretched bond, where RHF-based CCSD fails: that molecule has no reference, and the
    // cells still run (it stopped the whole comparison with the bare message)
    r.kind = "none";
    r.label = "no CCSD(T) reference: CCSD/" + basis + " failed (" + e.what() + "); give the molecule file an e_ref "
              "(references: auto or exact use it)";
    log::warn(system.name + ": " + r.label);
    return r;
  } catch (const BudgetError& e) {  // (its advice is ccsd's command line, which a comparison file has not)
    std::string why = e.what();
    if (const auto advice = why.find("; use Cholesky-decomposed integrals"); advice != std::string::npos)
      why.resize(advice);
    throw ConfigError("'reference_basis': the CCSD(T)/" + basis + " reference of " + system.name + ": " + why +
                      ". In a comparison, give a smaller reference_basis, or compute the reference with nnvmc ccsd "
                      "(--cholesky 1e-5 --triples) and give it as the molecule file's e_ref");
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.energy = run.cc.e_ccsd_t;
  r.label = "CCSD(T)/" + basis + " (nnvmc ccsd)";
  return r;
}

}  // namespace

namespace {
/// Whether `spec` scores molecule `m` against its file's e_ref (decided by the file alone: under
/// mpirun every rank must agree on it, whatever its copy of the cache holds).
bool takes_file_reference(const CompareSpec& spec, const MoleculeEntry& m) {
  return spec.references == ReferenceMode::exact || (spec.references == ReferenceMode::automatic && m.system.e_ref);
}

/// The reference of molecule `m` that needs no computing: its file's e_ref (when `spec` takes
/// it), or the CCSD(T) result `cache` holds for the same geometry and basis; nullopt otherwise
/// (also for a damaged cache entry: it is computed again).
std::optional<Reference> reference_at_hand(const CompareSpec& spec, const MoleculeEntry& m, const nlohmann::json& cache) {
  Reference r;
  if (takes_file_reference(spec, m)) {
    r.kind = "e_ref";
    r.energy = *m.system.e_ref;
    r.label = m.system.e_ref_source.empty() ? "molecule file e_ref" : m.system.e_ref_source;
    return r;
  }
  const auto it = cache.find(m.label);
  const auto text = [&](const char* key) {  // "" when absent or not a string
    return it->contains(key) && (*it)[key].is_string() ? (*it)[key].get<std::string>() : std::string();
  };
  if (it == cache.end() || !it->is_object() || text("fingerprint") != fingerprint(m.system) ||
      text("basis") != spec.reference_basis || text("kind").empty() || text("label").empty())
    return std::nullopt;
  r.kind = text("kind");
  r.label = text("label");
  if (it->contains("energy") && (*it)["energy"].is_number()) r.energy = (*it)["energy"].get<double>();
  if (it->contains("seconds") && (*it)["seconds"].is_number()) r.seconds = (*it)["seconds"].get<double>();
  return r;
}
}  // namespace

std::vector<Reference> compute_references(const CompareSpec& spec) {
  const std::string cache_path = spec.output + "/references.json";
  nlohmann::json cache = read_cache(cache_path);
  std::vector<Reference> out;
  for (const auto& m : spec.molecules) {
    Reference r;
    const auto at_hand = reference_at_hand(spec, m, cache);
    // Each rank read the cache itself (an output on node-local disks, or a stale network
    // view, may differ): the CCSD below is a collective, so all ranks run it if one must.
    if (takes_file_reference(spec, m) || !parallel::world().any(!at_hand)) {
      r = *at_hand;
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
    log::info(strfmt("reference %-10s %s  (%s)", m.label.c_str(),
                     std::isfinite(r.energy) ? strfmt("%.6f Eh", r.energy).c_str() : "none", r.label.c_str()));
    out.push_back(r);
  }
  return out;
}

std::vector<Reference> known_references(const CompareSpec& spec) {
  const nlohmann::json cache = read_cache(spec.output + "/references.json");
  std::vector<Reference> out;
  for (const auto& m : spec.molecules) {
    if (auto r = reference_at_hand(spec, m, cache)) {
      out.push_back(*r);
      continue;
    }
    Reference r;
    const bool open_shell = m.system.n_up() != m.system.n_down();
    r.kind = open_shell ? "none" : "ccsd_t";
    r.label = open_shell ? kOpenShellLabel
                         : "CCSD(T)/" + spec.reference_basis + " (nnvmc ccsd), computed when the comparison runs";
    out.push_back(r);
  }
  return out;
}

}  // namespace nnvmc::compare
