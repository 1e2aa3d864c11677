#pragma once
/// @file rccsd.hpp
/// Closed-shell CCSD and CCSD(T) on MO integrals (conventional or Cholesky).
#include <torch/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "batching/plan.hpp"
#include "ccsd/contractor.hpp"
#include "ccsd/kernel_choice.hpp"
#include "ccsd/mo_integrals.hpp"
#include "ccsd/usage.hpp"

namespace nnvmc::ccsd {

/// Where a run keeps the MO integrals, the cached blocks, the amplitudes and the DIIS rows.
enum class Residency {
  automatic,  ///< on plan.device when it is not the CPU and the backend is torch, if they fit
  device,     ///< on plan.device whenever they fit (on the CPU: they are charged to the budget)
  host,       ///< host memory; with a device, every contraction uploads its operands
};
/// "auto" | "on" | "off"; @throws InputError naming `key`.
Residency parse_residency(const std::string& text, const std::string& key = "resident");

/// Solver settings.
struct CcsdOptions {
  int max_iterations = 100;          ///< stop after this many iterations ...
  bool require_convergence = true;   ///< ... and throw NumericalError if not converged by then
                                     ///< (false: return the unconverged result, e.g. for timing)
  double energy_tolerance = 1e-10;   ///< converged when |ΔE| < this (hartree) ...
  double residual_tolerance = 1e-8;  ///< ... and the amplitude update norm |Δt| < this
  /// What the non-convergence error advises (the flags of the command that runs it; "": none).
  std::string convergence_advice;
  int diis_size = 8;                 ///< stored DIIS vectors (0: plain Jacobi)
  /// Keep the t1-independent integral blocks (bare o²v², o v³ blocks and the packed ladder
  /// integrals, ~v⁴/2 + 2ov³ doubles) for the whole run, so an iteration never touches the ERIs
  /// / Cholesky vectors: with conventional integrals always (the blocks are smaller than the MO
  /// ERIs the run holds anyway, and dressing would make whole dressed blocks every iteration,
  /// v⁴ for the ladder alone), with Cholesky vectors when they fit half the budget (the dressed
  /// vectors are naux·n², far less than v⁴). false: dress them every iteration.
  bool cache_integrals = true;
  /// Keep freed memory in the process during the iterations (glibc mallopt: no mmap for large
  /// blocks, no trimming), so buffers of one iteration are not page-faulted in again the next.
  bool retain_heap = true;
  /// Resident runs keep the MO integrals, the cached blocks, the amplitudes and the DIIS rows on
  /// plan.device for the whole run (needs the torch backend, cached integrals and resident_bytes
  /// within half the budget; the contractions plan within the rest), so no term moves anything
  /// between host and device. Otherwise they stay in host memory and, with a device, every
  /// contraction uploads its operands and downloads its result.
  Residency resident = Residency::automatic;
  bool triples = false;              ///< also compute the (T) correction
  /// Elementwise and layout kernels of the packed ladder and (T): fused host loops on the CPU
  /// (automatic) or torch ops (torch_ops: what a GPU runs; selectable so that CI runs that path).
  KernelChoice kernels = KernelChoice::automatic;
  batching::PlanOptions plan;        ///< budget, split, backend and device of every heavy contraction
  /// plan.budget_bytes is host memory's "auto" (a share of what was free before the integrals
  /// existed): measured again once the cached blocks are built and again before (T), so the
  /// contractions plan within a share of what is free then (the integrals, blocks, amplitudes and
  /// DIIS vectors are not counted twice as free). Host runs only (not resident, no staging backend).
  bool budget_is_auto = false;
  /// Runs every contraction's GEMMs for the whole run (set-up, iterations, (T)), so operands it
  /// keeps resident stay on the device across iterations (e.g. the staged backend, or it on a
  /// simulated device in tests); null: one backend of plan.backend per contraction.
  std::shared_ptr<batching::GemmBackend> backend;
  bool explain = false;              ///< keep the plan of each term (CcsdResult::plans)
  bool verbose = false;              ///< log one line per iteration
};

/// Energies and timings.
struct CcsdResult {
  double e_hf = 0;                    ///< reference energy (hartree)
  double e_corr = 0;                  ///< CCSD correlation energy
  double e_ccsd = 0;                  ///< e_hf + e_corr
  double e_t = 0;                     ///< (T) correction (0 unless computed)
  double e_ccsd_t = 0;                ///< e_ccsd + e_t
  int iterations = 0;                 ///< CCSD iterations
  bool converged = false;             ///< tolerances met
  double seconds_per_iteration = 0;   ///< mean wall time of one iteration
  std::vector<double> seconds_iterations;  ///< wall time of each iteration (the first includes warm-up)
  Usage usage_per_iteration;          ///< mean wall, user, system time and page faults of one iteration
  double seconds_triples = 0;         ///< wall time of (T)
  std::map<std::string, TermStats> terms;  ///< per contraction term, over all iterations
  std::vector<std::string> plans;     ///< plans of every term (options.explain)
  std::map<std::string, int> plans_not_shown;  ///< per term: distinct plans left out of `plans`
  bool cached_integrals = false;      ///< the iteration ran on cached bare integrals (CcsdOptions::cache_integrals)
  bool resident = false;              ///< the iteration's tensors lived on plan.device (CcsdOptions::resident)
  std::int64_t resident_bytes = 0;    ///< device memory set aside for them (resident runs)
  /// The contractions' budget during the iterations and during (T) (bytes; ≤ 0: no limit), after
  /// budget_is_auto's measurements.
  std::int64_t budget_iterations = 0, budget_triples = 0;
  /// A staging backend's device memory (CcsdOptions::backend): its budget (0: none) and the
  /// most it held at once (staging buffers, kept intermediates and resident operands), so far.
  std::int64_t device_budget_bytes = 0, device_peak_bytes = 0;
  double seconds_setup = 0;           ///< wall time of preparing the cached integrals (and, resident, of uploading the MO integrals)
  std::int64_t bytes_h2d_setup = 0;   ///< host → device bytes before the first iteration
  std::vector<std::int64_t> bytes_h2d_per_iteration;  ///< host → device bytes of each iteration
  std::vector<std::int64_t> bytes_d2h_per_iteration;  ///< device → host bytes of each iteration
  /// Lee–Taylor T1 diagnostic, ‖t1‖ / √(2 o) (closed shell, active o), and Janssen–Nielsen D1,
  /// the largest singular value of t1 [o, v]: above about 0.02 and 0.05 CCSD is unreliable
  /// (multireference character, a poor or unstable reference).
  double t1_diagnostic = 0, d1_diagnostic = 0;
  torch::Tensor t1;                   ///< converged singles [o, v]
  torch::Tensor t2;                   ///< converged doubles [o, v, o, v]
};

/// Device memory a resident run keeps (CcsdOptions::resident) for `mo`: the MO integrals,
/// the cached blocks, t1/t2 with their DIIS rows (vector and error per slot) and a reserve of
/// 16 o²v² tensors for the iteration's intermediates.
std::int64_t resident_bytes(const MoIntegrals& mo, const CcsdOptions& options);

/// The budget every contraction plans within (before a resident run sets its tensors aside):
/// plan.budget_bytes, and for a staging backend with a device budget (batching::
/// StagedGemmOptions::device_budget_bytes) at most half of that. The staged pipeline holds two
/// batches' operands, outputs and intermediates on its device at once (two staging slots), and
/// the operands it keeps resident share the rest. 0: no limit.
std::int64_t contraction_budget(const CcsdOptions& options);

/// Runs CCSD (and (T) when asked). @throws NumericalError when it does not converge,
/// BudgetError when a contraction cannot fit the budget.
CcsdResult run_rccsd(const MoIntegrals& mo, const CcsdOptions& options = {});

/// (T) correction for converged amplitudes t1 [o, v], t2 [o, v, o, v] (bare integrals).
/// `kernels`: the per-triple elementwise work as fused host loops (automatic, on the CPU) or as
/// torch ops (the device path).
double triples_correction(const MoIntegrals& mo, const torch::Tensor& t1, const torch::Tensor& t2,
                          Contractor& contract, KernelChoice kernels = KernelChoice::automatic);

}  // namespace nnvmc::ccsd
