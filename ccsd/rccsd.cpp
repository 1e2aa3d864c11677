/// CCSD iterations: dress (or use cached bare integrals), residual, Jacobi update with
/// orbital-energy denominators, DIIS.
#include "ccsd/rccsd.hpp"
#include "ccsd/driver.hpp"  // minimum_budget_bytes

#include <malloc.h>
#include <torch/torch.h>

#include <chrono>
#include <climits>
#include <cmath>
#include <memory>

#include "batching/backend.hpp"
#include "batching/budget.hpp"
#include "ccsd/diis.hpp"
#include "ccsd/dressed.hpp"
#include "ccsd/residual.hpp"
#include "core/errors.hpp"
#include "core/log.hpp"
#include "parallel/communicator.hpp"

namespace nnvmc::ccsd {

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// While alive, glibc keeps freed blocks in the heap instead of unmapping them (large blocks are
/// not mmap'd, the top is not trimmed); afterwards the defaults return and the heap is trimmed.
class RetainedHeap {
 public:
  explicit RetainedHeap(bool on) : on_(on) {
    if (!on_) return;
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, INT_MAX);  // freed memory stays in the heap (not trimmed) until the end
    mallopt(M_TOP_PAD, 64 << 20);        // grow the heap in 64 MiB steps
  }
  ~RetainedHeap() {
    if (!on_) return;
    mallopt(M_MMAP_MAX, 65536);  // glibc's defaults
    mallopt(M_TRIM_THRESHOLD, 128 * 1024);
    mallopt(M_TOP_PAD, 128 * 1024);
    malloc_trim(0);
  }
  RetainedHeap(const RetainedHeap&) = delete;
  RetainedHeap& operator=(const RetainedHeap&) = delete;

 private:
  bool on_;
};
/// Whether a run keeps its tensors on plan.device (CcsdOptions::resident).
/// Why the run's tensors cannot stay on plan.device ("" when they can).
std::string residency_obstacle(const MoIntegrals& mo, const CcsdOptions& options) {
  if (!options.cache_integrals) return "--no-cached-integrals";
  if (options.backend || options.plan.backend != batching::BackendKind::torch)
    return "the cublas backend stages its operands";
  const std::int64_t budget = options.plan.budget_bytes, need = resident_bytes(mo, options);
  if (budget > 0 && 2 * need > budget)
    return "integrals, cached blocks, amplitudes and DIIS (" + batching::format_bytes(double(need)) +
           ") do not fit half of --memory";
  return "";
}
/// Whether the iterations run on cached bare blocks (CcsdOptions::cache_integrals): the
/// fallback of dressing every iteration saves memory only with Cholesky vectors.
bool caches_integrals(const MoIntegrals& mo, const CcsdOptions& options, std::int64_t budget) {
  if (!options.cache_integrals) return false;
  if (!mo.cholesky() || budget <= 0) return true;
  return 2 * CachedIntegrals::bytes(mo.space.n_act_occ(), mo.space.n_vir()) <= budget;
}
bool runs_resident(const MoIntegrals& mo, const CcsdOptions& options) {
  const bool wanted = options.resident == Residency::device ||
                      (options.resident == Residency::automatic && !torch::Device(options.plan.device).is_cpu());
  return wanted && residency_obstacle(mo, options).empty();
}
}  // namespace

Residency parse_residency(const std::string& text, const std::string& key) {
  if (text == "auto") return Residency::automatic;
  if (text == "on") return Residency::device;
  if (text == "off") return Residency::host;
  throw InputError(key + ": '" + text + "' is not one of auto, on, off");
}

std::int64_t contraction_budget(const CcsdOptions& options) {
  const std::int64_t plan = options.plan.budget_bytes;
  const std::int64_t device = options.backend ? options.backend->device_budget_bytes() : 0;
  if (device <= 0) return plan;
  return plan > 0 ? std::min(plan, device / 2) : device / 2;
}

std::int64_t resident_bytes(const MoIntegrals& mo, const CcsdOptions& options) {
  const std::int64_t o = mo.space.n_act_occ(), v = mo.space.n_vir(), amp = 8 * (o * v * o * v + o * v);
  return mo.bytes() + CachedIntegrals::bytes(o, v) + (1 + 2 * std::max(options.diis_size, 0)) * amp +
         16 * 8 * o * v * o * v;
}

CcsdResult run_rccsd(const MoIntegrals& mo_in, const CcsdOptions& options) {
  const RetainedHeap heap(options.retain_heap);
  CcsdResult res;
  // Every rank must take the same path (the ladders and (T) run collectives on its tensors);
  // budgets measured per rank (--memory auto) may differ near the threshold.
  auto& comm = parallel::world();
  res.resident = !comm.any(!runs_resident(mo_in, options));
  // a resident run works on a device copy of the integrals; everything below follows its tensors
  if (res.resident) batching::ensure_device_runtime(options.plan.device);  // before torch's first CUDA use
  const auto t_upload = std::chrono::steady_clock::now();
  const MoIntegrals mo = res.resident ? mo_in.to(torch::Device(options.plan.device)) : mo_in;
  const double seconds_upload = seconds_since(t_upload);
  const std::int64_t bytes_upload = res.resident && !torch::Device(options.plan.device).is_cpu() ? mo_in.bytes() : 0;
  batching::PlanOptions plan = options.plan;
  plan.budget_bytes = contraction_budget(options);
  if (plan.budget_bytes != options.plan.budget_bytes)
    log::info(strfmt("ccsd: the staged backend may hold %s of device memory; contractions plan within %s",
                     batching::format_bytes(double(options.backend->device_budget_bytes())).c_str(),
                     batching::format_bytes(double(plan.budget_bytes)).c_str()));
  if (!res.resident && options.resident == Residency::device)  // --resident on asks; say why it is not
    log::warn("ccsd: --resident on, but the run is not resident: " + residency_obstacle(mo_in, options));
  if (res.resident) {
    res.resident_bytes = resident_bytes(mo_in, options);
    if (plan.budget_bytes > 0) plan.budget_bytes -= res.resident_bytes;  // contractions get the rest
    log::info(strfmt("ccsd: integrals, cached blocks, amplitudes and DIIS on %s (%s set aside, %s for contractions)",
                     options.plan.device.c_str(), batching::format_bytes(double(res.resident_bytes)).c_str(),
                     plan.budget_bytes > 0 ? batching::format_bytes(double(plan.budget_bytes)).c_str() : "no limit"));
  }
  const auto& s = mo.space;
  const std::int64_t o = s.n_act_occ(), v = s.n_vir();
  Contractor c(plan, options.explain, options.backend);
  res.e_hf = mo.e_hf;
  const auto t_setup = std::chrono::steady_clock::now();
  const std::int64_t budget = options.plan.budget_bytes;
  std::unique_ptr<CachedIntegrals> cached;
  if (!comm.any(!caches_integrals(mo, options, budget)))
    cached = std::make_unique<CachedIntegrals>(mo, c, options.kernels);
  DressedHamiltonian h(mo, c);
  torch::Tensor L_ovov = cached ? cached->blocks.L_ovov : torch::Tensor();
  res.cached_integrals = bool(cached);
  // "auto" was a share of the memory free before the integrals existed: take the share of what is
  // free now that they, the cached blocks and the amplitudes' buffers are held
  const bool remeasure = options.budget_is_auto && !res.resident && !options.backend &&
                         options.plan.budget_bytes > 0 && torch::Device(options.plan.device).is_cpu();
  const auto remeasure_budget = [&](const char* stage, std::int64_t reserved) {
    if (!remeasure) return;
    std::int64_t now = batching::MemoryBudget::parse("auto", "cpu", "--memory", reserved).bytes();
    // Below what any plan needs (check_memory_budget's floor) the run keeps the budget it had:
    // tiny batches would crawl (a run under ulimit -v took minutes to fail), while an allocation
    // that fails now is an out-of-memory error with advice
    const std::int64_t floor = minimum_budget_bytes(s.n_mo, s.n_occ, s.n_frozen, options.triples);
    if (now < floor) {  // (under ulimit -v the address space reserved but unused reads as taken: often this)
      log::info(strfmt("ccsd: after the integrals, --memory auto reads %s for the %s, less than the %s any plan "
                       "needs; the budget stays %s",
                       batching::format_bytes(double(now)).c_str(), stage, batching::format_bytes(double(floor)).c_str(),
                       batching::format_bytes(double(c.options().budget_bytes)).c_str()));
      return;
    }
    if (now == c.options().budget_bytes) return;
    log::info(strfmt("ccsd: --memory auto for the %s: %s (%s before)", stage, batching::format_bytes(double(now)).c_str(),
                     batching::format_bytes(double(c.options().budget_bytes)).c_str()));
    c.set_budget(now);
  };
  // (the amplitudes, DIIS vectors and iteration intermediates are allocated below: reserved; the
  // integrals and the cached blocks are held already, or not made at all)
  remeasure_budget("iterations", resident_bytes(mo, options) - mo.bytes() - CachedIntegrals::bytes(o, v));
  res.budget_iterations = c.options().budget_bytes;
  c.reset_stats();  // per-term statistics are about the iterations (on a GPU: waits for the set-up's work)
  res.seconds_setup = seconds_since(t_setup) + seconds_upload;
  res.bytes_h2d_setup = c.bytes_h2d() + bytes_upload;
  const torch::Tensor eo = mo.eps.narrow(0, s.n_frozen, o), ev = mo.eps.narrow(0, s.n_occ, v);
  const torch::Tensor d1 = eo.unsqueeze(1) - ev.unsqueeze(0);                      // [o, v]
  const torch::Tensor d2 = (d1.unsqueeze(2).unsqueeze(3) + d1.unsqueeze(0).unsqueeze(0)).contiguous();  // [o,v,o,v]
  torch::Tensor t1 = torch::zeros({o, v}, mo.eps.options());  // where the integrals are
  torch::Tensor t2 = torch::zeros({o, v, o, v}, mo.eps.options());
  Diis diis(options.diis_size);
  double e_old = 0;
  const auto t_start = std::chrono::steady_clock::now();
  const Usage u_start = Usage::now();
  double last_de = NAN, last_dnorm = NAN;  // of the last iteration (for the non-convergence error)
  for (int it = 1; it <= options.max_iterations; ++it) {
    const std::int64_t h2d0 = c.bytes_h2d(), d2h0 = c.bytes_d2h();
    const auto t_it = std::chrono::steady_clock::now();
    Residual r;
    if (cached) {
      r = ccsd_residual(*cached, c, t1, t2);
    } else {
      h.dress(t1);
      r = ccsd_residual(h, c, t1, t2);
    }
    std::vector<torch::Tensor> next, err;
    double dnorm = 0;
    {
      const Contractor::Section section(c, "update");
      err = {r.r1 / d1, r.r2.div_(d2)};  // the Jacobi step is the DIIS error vector
      next = {t1 + err[0], t2 + err[1]};
      dnorm = std::sqrt((err[0].flatten().dot(err[0].flatten()) + err[1].flatten().dot(err[1].flatten())).item<double>());
    }
    {
      const Contractor::Section section(c, "diis");
      diis.extrapolate(next, err);
    }
    {
      const Contractor::Section section(c, "symmetrize");
      t1 = next[0];
      t2 = (next[1] + next[1].permute({2, 3, 0, 1})).mul_(0.5);  // keep t_ij^ab = t_ji^ba exactly
    }
    double e = 0;
    {
      const Contractor::Section section(c, "energy");
      e = cached ? ccsd_correlation_energy_L(L_ovov, t1, t2) : ccsd_correlation_energy(h.block("ovov"), t1, t2);
    }
    res.iterations = it;
    res.seconds_iterations.push_back(seconds_since(t_it));  // the energy's .item() waited for the device
    res.bytes_h2d_per_iteration.push_back(c.bytes_h2d() - h2d0);
    res.bytes_d2h_per_iteration.push_back(c.bytes_d2h() - d2h0);
    if (options.verbose)
      // (%.12g past 1e6: a diverging run printed a 240-digit E_corr before its error, a user audit)
      log::info(strfmt("ccsd iter %3d  E_corr %s  dE %.2e  |dt| %.2e  %.3f s", it,
                       strfmt(std::fabs(e) < 1e6 ? "%.12f" : "%.12g", e).c_str(), e - e_old, dnorm,
                       res.seconds_iterations.back()));
    // Every rank stops together: their replicated amplitudes come from contraction plans that may
    // differ by rank (budgets and rates are measured per rank), so e and dnorm may differ in
    // the last bits, and a rank stopping alone would leave the others waiting in a collective.
    // A blown-up iteration is stopped at once: it ran its whole iteration limit in NaN and then
    // advised raising the limit (N2 at 3 Å from the unstable RHF, plain Jacobi: a user audit)
    if (comm.any(!(std::isfinite(e) && std::isfinite(dnorm))))
      throw NumericalError(strfmt(
          "CCSD diverged: iteration %d gave a non-finite %s (last finite correlation energy %.6g Eh, |dt| %s); the "
          "amplitudes blow up on references with near-degenerate orbitals: check the RHF (--stability check or "
          "follow)%s",
          it, std::isfinite(e) ? "amplitude update" : "correlation energy", e_old,
          std::isfinite(last_dnorm) ? strfmt("%.1e", last_dnorm).c_str() : "n/a",
          options.diis_size > 0 ? "" : ", and keep DIIS on (--diis-size 8)"));
    const bool done = !comm.any(!(std::abs(e - e_old) < options.energy_tolerance && dnorm < options.residual_tolerance));
    last_de = std::abs(e - e_old), last_dnorm = dnorm;
    e_old = e;
    if (done) {
      res.converged = true;
      break;
    }
  }
  res.seconds_per_iteration = seconds_since(t_start) / std::max(res.iterations, 1);
  res.usage_per_iteration = (Usage::now() - u_start).scaled(1.0 / std::max(res.iterations, 1));
  if (!res.converged && options.require_convergence)
    throw NumericalError(strfmt("CCSD did not converge in %d iteration%s (last |dE| = %.1e Eh, |dt| = %.1e; converged "
                                "below %.0e and %.0e)%s",
                                options.max_iterations, options.max_iterations == 1 ? "" : "s", last_de, last_dnorm, options.energy_tolerance,
                                options.residual_tolerance,
                                options.convergence_advice.empty() ? "" : ("; " + options.convergence_advice).c_str()));
  // energy of the final amplitudes with the bare ovov block (equal to the dressed one)
  res.e_corr = e_old;
  res.e_ccsd = res.e_hf + res.e_corr;
  res.t1 = t1.cpu();  // results in host memory, wherever the iteration ran
  res.t2 = t2.cpu();
  if (o > 0 && v > 0) {
    res.t1_diagnostic = res.t1.norm().item<double>() / std::sqrt(2.0 * double(o));
    res.d1_diagnostic = torch::linalg_matrix_norm(res.t1, 2).item<double>();
  }
  if (options.triples && res.converged) {
    // (T) builds its own integral slices: the iterations' cached blocks (the packed ladder alone
    // is v⁴/2 numbers) and DIIS history (2 · diis_size amplitude vectors) would only add to its
    // peak, on a GPU with resident data as on the host
    cached.reset();
    L_ovov = torch::Tensor();
    diis = Diis(options.diis_size);
    remeasure_budget("(T) correction", 0);
    res.budget_triples = c.options().budget_bytes;
    const auto t0 = std::chrono::steady_clock::now();
    try {
      res.e_t = triples_correction(mo, t1, t2, c, options.kernels);
    } catch (...) {  // (out of memory, say): the converged CCSD is not lost with it
      log::warn(strfmt("(T) did not finish; the converged CCSD: E(HF) %.10f, E(CCSD) %.10f (correlation %.10f)",
                       res.e_hf, res.e_ccsd, res.e_corr));
      throw;
    }
    res.seconds_triples = seconds_since(t0);
  }
  res.e_ccsd_t = res.e_ccsd + res.e_t;
  res.terms = c.stats();
  res.plans = c.plans();
  res.plans_not_shown = c.plans_not_shown();
  if (options.backend) {
    res.device_budget_bytes = options.backend->device_budget_bytes();
    res.device_peak_bytes = options.backend->peak_device_bytes();
  }
  return res;
}

}  // namespace nnvmc::ccsd
