#include "ccsd/driver.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "batching/backend.hpp"
#include "batching/budget.hpp"
#include "batching/cost_model.hpp"
#include "ccsd/cholesky.hpp"
#include "ccsd/mo_integrals.hpp"
#include "core/errors.hpp"
#include "core/log.hpp"
#include "parallel/communicator.hpp"
#include "scf/cholesky_eri.hpp"
#include "scf/integrals.hpp"

namespace nnvmc::ccsd {

std::int64_t doubles_block_bytes(std::int64_t n_basis, std::int64_t n_occupied, std::int64_t n_frozen) {
  const std::int64_t o = std::max<std::int64_t>(n_occupied - n_frozen, 0), v = std::max<std::int64_t>(n_basis - n_occupied, 0);
  return 8 * o * o * v * v;
}

std::int64_t minimum_budget_bytes(std::int64_t n_basis, std::int64_t n_occupied, std::int64_t n_frozen, bool triples) {
  const std::int64_t v = std::max<std::int64_t>(n_basis - n_occupied, 0);
  return std::max({doubles_block_bytes(n_basis, n_occupied, n_frozen), 8 * n_basis * n_basis,
                   triples ? 8 * v * v * v : std::int64_t(0), kMinimumBudgetBytes});
}

void check_memory_budget(const System& system, std::int64_t n_basis, const CcsdRunOptions& options) {
  const std::int64_t budget = contraction_budget(options.ccsd);
  if (budget <= 0) return;  // no limit
  // --memory of a staged run is the device's, of which the contractions get half; its host side
  // plans within the machine's free memory (auto), which --memory does not change
  const bool staged = options.ccsd.backend && options.ccsd.backend->device_budget_bytes() > 0;
  const bool device_limited = staged && (budget < options.ccsd.plan.budget_bytes || options.ccsd.plan.budget_bytes <= 0);
  const std::int64_t per_flag = device_limited ? 2 : 1;
  const int n_frozen = options.frozen_core ? frozen_core_orbitals(system) : 0;
  const std::int64_t n_occupied = system.n_electrons() / 2;
  const std::int64_t floor = minimum_budget_bytes(n_basis, n_occupied, n_frozen, options.ccsd.triples);
  const std::int64_t v = std::max<std::int64_t>(n_basis - n_occupied, 0);
  const std::string what = "the CCSD of " + (system.name.empty() ? std::string("this molecule") : system.name) +
                           " in " + options.basis;
  const auto bytes = [](std::int64_t b) { return batching::format_bytes(double(b)); };
  if (budget < floor)
    throw BudgetError("a memory budget of " + bytes(budget) + (per_flag == 2 ? " (half the staged backend's device memory)" : "") +
                      " is too small for " + what + ": it needs at least " + bytes(floor) +
                      " (the largest of one doubles-amplitude block, " +
                      bytes(doubles_block_bytes(n_basis, n_occupied, n_frozen)) + "; an AO matrix, " +
                      bytes(8 * n_basis * n_basis) +
                      (options.ccsd.triples ? "; (T)'s v³ block, " + bytes(8 * v * v * v) : std::string()) +
                      "; and the least any CCSD is given, " + bytes(kMinimumBudgetBytes) + "); " +
                      (staged && !device_limited
                           ? std::string("the staged backend's host side plans within the machine's free memory, which is too little")
                           : "give --memory " + batching::format_bytes_up(double(per_flag * 4 * floor)) + " or more (4× that minimum" +
                                 (per_flag == 2 ? std::string(", doubled for the staged backend") : std::string()) +
                                 ": less splits the contractions into many small batches)" +
                                 (options.memory_is_auto ? " (auto gave this much: the machine has too little free memory)"
                                                         : ", or auto")));
  if (budget < 4 * floor && options.ccsd.plan.split != batching::SplitStrategy::none)  // (none: fits whole or stops)
    log::warn("a memory budget of " + bytes(budget) + " splits the contractions of " + what +
              " into many small batches, which can make it several times slower; give " +
              batching::format_bytes_up(double(per_flag * 4 * floor)) + " or more, or auto");
}

namespace {

/// Refuses conventional integrals that the host cannot hold (about three AO tensors while they
/// are transformed, five without cached blocks: conventional_integrals_peak_bytes, against this
/// rank's part of the node's available memory): they ended in std::bad_alloc or the kernel's OOM
/// killer after the SCF.
void check_conventional_memory(std::int64_t n_basis, bool cached) {
  const batching::HostMemory host = batching::host_memory();
  const int local_ranks = parallel::world().local_size();
  const std::int64_t share = host.share(local_ranks);
  if (share < 0) return;  // unknown: nothing to compare with
  const int ranks = host.available_per_process ? 1 : std::max(local_ranks, 1);
  const double room = static_cast<double>(share), need = conventional_integrals_peak_bytes(n_basis, cached);
  if (need > 0.9 * room)
    throw BudgetError(strfmt("conventional integrals for %d basis functions need about %s (%s), more than 90 %% of the "
                             "%s available%s (limited by %s); use Cholesky-decomposed integrals (--cholesky 1e-5) "
                             "or a smaller basis",
                             static_cast<int>(n_basis), batching::format_bytes(need).c_str(),
                             cached ? "three times the AO integrals, while they are transformed"
                                    : "five times the AO integrals, with --no-cached-integrals",
                             batching::format_bytes(room).c_str(),
                             ranks > 1 ? strfmt(" to each of this node's %d ranks", ranks).c_str() : "",
                             host.available_source.c_str()));
}

/// Makes every rank plan with rank 0's cost model (the host's and, on a GPU, the GPU's rates),
/// measured or read from the cache once. Ranks measuring at the same time on one node would each
/// see a fraction of the machine, plan with rates K times too low, and write those to the cache
/// file every later run reads. (Heterogeneous nodes plan with rank 0's hardware.) Collective.
void adopt_rank0_rates(const CcsdRunOptions& options) {
  auto& comm = parallel::world();
  if (comm.size() == 1) return;  // measure() as usual, when first needed
  std::vector<std::string> devices{"cpu"};  // the integral transformation plans on the host
  if (!options.ccsd.plan.cost) {              // rates the caller gave need no measurement
    if (options.ccsd.plan.device != "cpu") devices.push_back(options.ccsd.plan.device);
    if (options.ccsd.plan.backend == batching::BackendKind::cublas) devices.push_back("cuda");
  }
  static_assert(std::is_trivially_copyable_v<batching::CostModel>);
  std::vector<batching::CostModel> rates(devices.size());
  if (comm.is_root())
    for (std::size_t d = 0; d < devices.size(); ++d) rates[d] = batching::CostModel::measure(devices[d]);
  comm.broadcast(rates.data(), rates.size() * sizeof(batching::CostModel), 0);
  // under this rank's own device names ("cuda:1" where rank 0 has "cuda:0")
  if (!comm.is_root())
    for (std::size_t d = 0; d < devices.size(); ++d) batching::CostModel::remember(devices[d], rates[d]);
}

}  // namespace

CcsdRun run_ccsd(const System& system, const CcsdRunOptions& options) {
  using clock = std::chrono::steady_clock;
  CcsdRun run;
  auto t0 = clock::now();
  if (system.n_electrons() % 2 != 0 || system.spin != 0)  // (run_rhf's message points to UHF, which CCSD does not take)
    throw InputError("CCSD here is closed-shell (RCCSD on an RHF reference), but " +
                     (system.name.empty() ? std::string("the molecule") : system.name) + " has " +
                     std::to_string(system.n_electrons()) + (system.n_electrons() == 1 ? " electron" : " electrons") + " and spin " + std::to_string(system.spin));
  scf::require_same_molecule_and_basis_on_all_ranks(system, options.basis);  // (the run is collective)
  const scf::BasisSet basis = scf::make_basis(options.basis, system);
  if (options.cholesky_tau <= 0) check_conventional_memory(basis.n_functions(), options.ccsd.cache_integrals);  // before the SCF, not after it
  check_memory_budget(system, basis.n_functions(), options);
  adopt_rank0_rates(options);
  const auto seconds = [](clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); };
  run.n_frozen = options.frozen_core ? frozen_core_orbitals(system) : 0;
  MoIntegrals mo;
  if (options.cholesky_tau > 0 && !options.exact_scf) {
    // one decomposition for the RHF's J/K and the CCSD's integrals
    const auto t_chol = clock::now();
    auto pairs = std::make_shared<const Eigen::MatrixXd>(scf::cholesky_eri_pairs(basis, options.cholesky_tau, options.scf.jk.integrals));
    const double seconds_cholesky = seconds(t_chol);
    scf::ScfOptions scf_options = options.scf;
    scf_options.jk.cholesky_tau = options.cholesky_tau;
    scf_options.jk.cholesky_pairs = pairs;
    t0 = clock::now();
    run.rhf = scf::run_rhf(system, basis, scf_options);
    run.seconds_scf = seconds(t0);
    run.scf_cholesky = true;
    t0 = clock::now();
    const torch::Tensor ao = expand_pairs(*pairs, std::int64_t(basis.n_functions()));
    pairs.reset();
    scf_options.jk.cholesky_pairs.reset();  // the expanded vectors replace them
    mo = cholesky_integrals(run.rhf, run.n_frozen, ao);
    run.seconds_integrals = seconds_cholesky + seconds(t0);
  } else {
    run.rhf = scf::run_rhf(system, basis, options.scf);
    run.seconds_scf = seconds(t0);
    t0 = clock::now();
    mo = options.cholesky_tau > 0 ? cholesky_integrals(run.rhf, basis, run.n_frozen, options.cholesky_tau, options.scf.jk.integrals)
                                  : conventional_integrals(run.rhf, basis, run.n_frozen, options.scf.jk.integrals);
    run.seconds_integrals = seconds(t0);
  }
  run.n_cholesky = mo.cholesky() ? int(mo.chol.size(0)) : 0;
  run.cc = run_rccsd(mo, options.ccsd);
  return run;
}

}  // namespace nnvmc::ccsd
