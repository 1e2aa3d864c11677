/// nnvmc ccsd MOLECULE [--basis B] [--cholesky TAU] [--memory BYTES] [--split c|x|auto]
///                     [--backend torch|cublas] [--device cpu|cuda] [--frozen-core] [--triples]
///                     [--max-iterations N] [--allow-unconverged] [--json] [--explain]
///                     [--no-cached-integrals] [--resident auto|on|off] [--threads T]
#include <ATen/Parallel.h>
#include <c10/core/Device.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <iostream>

#include <nlohmann/json.hpp>

#include "app/commands.hpp"
#include "app/scf_flags.hpp"
#include "batching/backend.hpp"
#include "batching/budget.hpp"
#include "batching/cuda_runtime.hpp"
#include "ccsd/driver.hpp"
#include "scf/basis.hpp"
#include "scf/parallel.hpp"
#include "parallel/communicator.hpp"
#include "parallel/gpu_sharing.hpp"
#include "core/errors.hpp"
#include "core/log.hpp"
#include "core/json_text.hpp"

namespace nnvmc::app {

namespace {

struct CcsdArgs {
  std::string molecule;
  std::string basis = "cc-pvdz";
  double cholesky = 0;
  std::string memory = "auto";
  std::string split = "auto";
  std::string backend = "torch";
  std::string device = "cpu";
  int max_iterations = 100;
  double energy_tolerance = ccsd::CcsdOptions{}.energy_tolerance;
  double residual_tolerance = ccsd::CcsdOptions{}.residual_tolerance;
  int diis_size = ccsd::CcsdOptions{}.diis_size;
  bool frozen_core = false, triples = false, json = false, explain = false, allow_unconverged = false;
  bool no_cache = false;
  bool exact_scf = false;
  std::string resident = "auto";
  int threads = 0;  ///< --threads: integral and tensor threads (0: the defaults, see the flag's help)
  ScfFlagText scf_text;  ///< --guess, --stability
  MoleculeStateFlags state;  ///< --charge, --spin
  scf::ScfOptions scf;  ///< the RHF's convergence settings
};

/// Janssen and Nielsen's bounds (Chem. Phys. Lett. 290, 423 (1998)) for CCSD: above them,
/// nondynamical correlation matters and CCSD(T) is unreliable.
constexpr double kT1DiagnosticBound = 0.02, kD1DiagnosticBound = 0.05;

/// (T) is computed from converged amplitudes only (--allow-unconverged may stop before).
bool triples_computed(const ccsd::CcsdRun& run) { return run.cc.converged; }

/// Whether the T1 or D1 diagnostic says the CCSD is unreliable (Janssen and Nielsen's bounds).
bool diagnostics_high(const ccsd::CcsdResult& cc) {
  return cc.t1_diagnostic > kT1DiagnosticBound || cc.d1_diagnostic > kD1DiagnosticBound;
}

void print_summary(const ccsd::CcsdRun& run, const System& system, const CcsdArgs& a) {
  const auto& cc = run.cc;
  // (what a reader of the output needs to repeat or trust it: the electrons, the integrals, the
  // convergence thresholds; energies in hartree)
  std::printf("molecule %s  charge %d  spin %d  %d electron%s (%d occupied, %d frozen)  basis %s  n_basis %d  %s\n",
              molecule_spec_label(a.molecule, system).c_str(), system.charge, system.spin, system.n_electrons(),
              system.n_electrons() == 1 ? "" : "s", system.n_electrons() / 2, run.n_frozen, a.basis.c_str(),
              run.rhf.n_basis,
              run.n_cholesky ? strfmt("Cholesky tau %g (%d vectors%s)", a.cholesky, run.n_cholesky,
                                      run.scf_cholesky ? ", also for the RHF" : "; RHF on exact ERIs").c_str()
                             : "conventional integrals");
  std::printf("E(HF)       %18.10f Eh\n", cc.e_hf);
  if (run.rhf.stability_follows > 0)
    std::printf("RHF followed %d RHF -> RHF instabilit%s of the first solution (E %.10f Eh)\n",
                run.rhf.stability_follows, run.rhf.stability_follows == 1 ? "y" : "ies", run.rhf.energy_before_follow);
  if (std::isfinite(run.rhf.stability_eigenvalue)) {  // (--stability check or follow)
    const double threshold = -a.scf.stability_threshold;
    const bool stable = run.rhf.stability_eigenvalue >= threshold;
    const double singlet = run.rhf.singlet_stability_eigenvalue;
    std::printf("RHF stability: lowest orbital-Hessian eigenvalue %.6f Eh%s (%s)\n",
                printable_zero(run.rhf.stability_eigenvalue),
                std::isfinite(singlet) && singlet != run.rhf.stability_eigenvalue
                    ? strfmt(", RHF -> RHF %.6f Eh", printable_zero(singlet)).c_str()
                    : "",
                stable ? "a minimum: stable"
                : std::isfinite(singlet) && singlet < threshold
                    ? (a.scf.stability == scf::StabilityMode::follow
                           ? "unstable: a lower RHF solution exists, which following did not reach (see the log), and "
                             "CCSD on this reference may converge slowly or to a poor energy"
                           : "unstable: a lower RHF solution exists (--stability follow finds it), and CCSD on this "
                             "reference may converge slowly or to a poor energy")
                    : "unstable towards a UHF solution, as at stretched bonds and in diradicals: RCCSD may converge "
                      "slowly or to a poor energy");
  }
  std::printf("E(CCSD)     %18.10f Eh   (correlation %.10f)%s\n", cc.e_ccsd, cc.e_corr,
              cc.converged ? strfmt("   converged in %d iteration%s (|dE| < %.0e Eh, |dt| < %.0e)", cc.iterations,
                                    cc.iterations == 1 ? "" : "s", a.energy_tolerance, a.residual_tolerance).c_str()
                           : strfmt("   NOT CONVERGED: the iterate after %d iteration%s (--allow-unconverged)",
                                    cc.iterations, cc.iterations == 1 ? "" : "s").c_str());
  std::printf("diagnostics T1 %.4f, D1 %.4f%s\n", cc.t1_diagnostic, cc.d1_diagnostic,
              diagnostics_high(cc) && cc.converged ? strfmt("   HIGH (above %.2f or %.2f): see the warning", kT1DiagnosticBound,
                                            kD1DiagnosticBound).c_str()
                                   : "");
  if (a.triples && triples_computed(run))
    std::printf("E(CCSD(T))  %18.10f Eh   ((T) %.10f, %.2f s)\n", cc.e_ccsd_t, printable_zero(cc.e_t, 5e-11),
                cc.seconds_triples);
  else if (a.triples)
    std::printf("E(CCSD(T))  not computed: (T) needs converged CCSD amplitudes\n");
  std::printf("iterations %d, %.3f s per iteration (SCF %.2f s, integrals %.2f s, %s)\n", cc.iterations,
              cc.seconds_per_iteration, run.seconds_scf, run.seconds_integrals,
              cc.cached_integrals ? strfmt("cached blocks %.2f s", cc.seconds_setup).c_str() : "no cached blocks");
  const auto budget = [](std::int64_t b) { return b > 0 ? batching::format_bytes(double(b)) : std::string("no limit"); };
  std::printf("contractions planned within %s%s\n", budget(cc.budget_iterations).c_str(),
              a.triples && triples_computed(run) ? strfmt(", (T) within %s", budget(cc.budget_triples).c_str()).c_str() : "");
  const auto& u = cc.usage_per_iteration;
  if (cc.resident)
    std::printf("resident on %s: integrals, cached blocks, amplitudes and DIIS (%s)\n", a.device.c_str(),
                batching::format_bytes(double(cc.resident_bytes)).c_str());
  if (cc.device_budget_bytes > 0)
    std::printf("staged backend: device memory peak %s of its %s\n", batching::format_bytes(double(cc.device_peak_bytes)).c_str(),
                batching::format_bytes(double(cc.device_budget_bytes)).c_str());
  std::printf("per iteration: wall %.3f s, user %.3f s, system %.3f s, %lld page faults\n", u.wall, u.user, u.sys,
              static_cast<long long>(u.minor_faults));
  if (!cc.bytes_h2d_per_iteration.empty())
    std::printf("host<->device per iteration: first %s / %s, last %s / %s (h2d / d2h)\n",
                batching::format_bytes(double(cc.bytes_h2d_per_iteration.front())).c_str(),
                batching::format_bytes(double(cc.bytes_d2h_per_iteration.front())).c_str(),
                batching::format_bytes(double(cc.bytes_h2d_per_iteration.back())).c_str(),
                batching::format_bytes(double(cc.bytes_d2h_per_iteration.back())).c_str());
  // the iteration's terms per iteration; the (T) step's ("triples…", run once) in all
  const auto table = [&](bool triples, const char* per, double it) {
    std::printf("%-14s %10s %10s %10s %10s %8s %12s %s\n", "term", (std::string("s") + per).c_str(),
                (std::string("cpu s") + per).c_str(), "GFLOP/cpu-s", (std::string("copied") + per).c_str(), "batches",
                "peak", "split");
    for (const auto& [term, st] : cc.terms)
      if ((term.rfind("triples", 0) == 0) == triples)
        std::printf("%-14s %10.4f %10.4f %10.2f %10s %8lld %12s %s\n", term.c_str(), st.seconds / it,
                    st.cpu_seconds / it, st.cpu_seconds > 0 ? st.flops / st.cpu_seconds * 1e-9 : 0.0,
                    batching::format_bytes(st.copy_bytes / it).c_str(), static_cast<long long>(st.batches),
                    batching::format_bytes(double(st.peak_bytes)).c_str(), st.strategy.c_str());
  };
  table(false, "/iter", std::max(cc.iterations, 1));
  if (cc.terms.count("triples")) {
    std::printf("(T), in all:\n");
    table(true, "", 1);
  }
  if (a.explain) {
    for (const auto& p : cc.plans) std::printf("%s", p.c_str());
    for (const auto& [term, n] : cc.plans_not_shown) std::printf("%s: %d more distinct plan(s) not shown\n", term.c_str(), n);
  }
}

void run_ccsd_command(const CcsdArgs& a) {
  try {  // before the budget and the backend ask the device anything
    batching::require_device(a.device);
  } catch (const InputError& e) {
    throw InputError(std::string("--device: ") + e.what());
  }
  // CLI11's needs() sees the flag given; --cholesky 0 (conventional) has no Cholesky vectors to leave out
  if (a.exact_scf && a.cholesky == 0)
    throw InputError("--exact-scf: the RHF is on exact ERIs already without Cholesky vectors (--cholesky 0); "
                     "give --cholesky TAU > 0, or drop --exact-scf");
  ccsd::CcsdRunOptions o;
  o.basis = a.basis;
  o.cholesky_tau = a.cholesky;
  o.exact_scf = a.exact_scf;
  o.scf = a.scf;
  if (a.threads > 0) {  // (0: the integrals take every core, the tensors libtorch's default)
    o.scf.jk.integrals.threads = a.threads;
    at::set_num_threads(a.threads);
  }
  apply_scf_flags(a.scf_text, o.scf, "ccsd");
  o.frozen_core = a.frozen_core;
  o.ccsd.triples = a.triples;
  o.ccsd.max_iterations = a.max_iterations;
  o.ccsd.energy_tolerance = a.energy_tolerance;
  o.ccsd.residual_tolerance = a.residual_tolerance;
  o.ccsd.diis_size = a.diis_size;
  o.ccsd.convergence_advice =
      std::string(a.scf_text.stability == "auto" || a.scf_text.stability == "off"
                      ? "check the RHF with --stability check (a saddle-point RHF, e.g. at a stretched bond, can keep "
                        "CCSD from converging; --stability follow moves to a lower RHF where one exists), "
                      : "") +
      "raise --max-iterations, or give --allow-unconverged to report the last iterate";
  o.ccsd.require_convergence = !a.allow_unconverged;
  o.ccsd.explain = a.explain;
  o.ccsd.cache_integrals = !a.no_cache;
  o.ccsd.verbose = true;  // per-iteration lines go to the log (stderr), so --json's stdout stays clean
  o.ccsd.resident = ccsd::parse_residency(a.resident, "--resident");
  // --memory is the device's with the staged cuBLAS backend (its buffers and the operands it
  // keeps there; the contractions plan within half of it, rccsd.hpp contraction_budget), and
  // the host's (its share of the machine) otherwise
  o.ccsd.plan.backend = batching::parse_backend(a.backend);
  const bool staged = o.ccsd.plan.backend == batching::BackendKind::cublas;
  // Several ranks on a node: one GPU per rank where "cuda" (or the staged backend's GPU) has no
  // index, as in training; ranks on the same physical GPU (more ranks than GPUs, a device
  // naming one) take their shares of its 'auto' (ranks bound to a GPU each do not share).
  std::string device = a.device;
  int gpu = 0;
  if (staged || device != "cpu") {
    auto& comm = parallel::world();
    const c10::Device d(staged ? std::string("cuda") : device);
    gpu = d.has_index() ? d.index() : parallel::rank_gpu(comm, batching::cuda_device_count());
    if (!staged && !d.has_index() && comm.size() > 1) device = "cuda:" + std::to_string(gpu);
    batching::MemoryBudget::set_cuda_auto_sharers(parallel::ranks_sharing_gpu(comm, gpu));
  }
  o.ccsd.plan.budget_bytes = staged ? batching::MemoryBudget::parse("auto", "cpu", "--memory").bytes()
                                    : batching::MemoryBudget::parse(a.memory, device, "--memory").bytes();
  o.memory_is_auto = a.memory == "auto";
  o.ccsd.budget_is_auto = o.memory_is_auto && !staged;  // measured again after the integrals (host runs)
  o.ccsd.plan.split = batching::parse_split(a.split);
  o.ccsd.plan.device = device;
  // the staged cuBLAS backend lives for the whole run: its streams, pinned buffers and the
  // operands it keeps on the device (the integral blocks) serve every contraction
  if (staged) {
    batching::StagedGemmOptions so;
    // auto: MemoryBudget::kAutoFraction of the GPU's free memory, taken when the backend is made
    so.device_budget_bytes = a.memory == "auto" ? -1 : batching::MemoryBudget::parse(a.memory, "cuda", "--memory").bytes();
    so.gpu = gpu;
    try {
      o.ccsd.backend = batching::make_backend(o.ccsd.plan.backend, device, so);
    } catch (const BudgetError& e) {
      throw BudgetError(std::string("--memory ") + a.memory + ": " + e.what());
    }
  }
  const System system = load_molecule_with_state(a.molecule, a.state);  // charge and spin before the closed-shell check
  if (const std::string w = system.short_distance_warning(); !w.empty()) log::warn(w);
  if (a.cholesky > 1e-4)  // (measured on H2O/cc-pVDZ against conventional integrals)
    log::warn(strfmt("--cholesky %g is a loose threshold: on H2O/cc-pVDZ, 1e-3 moves E(CCSD) by 0.2 mEh and 1e-2 "
                     "by 17 mEh (1e-5: 2 uEh); use 1e-5 or tighter for reference energies", a.cholesky));
  const ccsd::CcsdRun run = ccsd::run_ccsd(system, o);
  if (!run.cc.converged)
    log::warn(strfmt("CCSD not converged after %d iteration%s (--allow-unconverged): energies are not final%s",
                     run.cc.iterations, run.cc.iterations == 1 ? "" : "s", a.triples ? ", and (T) was not computed" : ""));
  if (diagnostics_high(run.cc) && run.cc.converged)
    log::warn(strfmt("CCSD diagnostics T1 %.4f and D1 %.4f exceed %.2f or %.2f: the molecule has multireference "
                     "character or the reference is poor (check it with --stability check), and CCSD(T) may be off by "
                     "several mEh or more",
                     run.cc.t1_diagnostic, run.cc.d1_diagnostic, kT1DiagnosticBound, kD1DiagnosticBound));
  if (!parallel::world().is_root()) return;  // every rank holds the same energies; rank 0 prints
  if (!a.json) return print_summary(run, system, a);
  nlohmann::json j;
  j["molecule"] = a.molecule;
  int frame = -1;  // (the frame "FILE.xyz@K" read, counted from 0)
  molecule_spec_label(a.molecule, system, &frame);
  if (frame >= 0) j["frame"] = frame;
  j["energy_units"] = "hartree";
  j["charge"] = system.charge;
  j["spin"] = system.spin;
  j["n_electrons"] = system.n_electrons();
  j["n_occupied"] = system.n_electrons() / 2;
  j["basis"] = a.basis;
  j["n_basis"] = run.rhf.n_basis;
  j["n_frozen"] = run.n_frozen;
  j["n_cholesky"] = run.n_cholesky;
  j["cholesky_tau"] = a.cholesky;
  j["scf_integrals"] = run.scf_cholesky ? "cholesky" : "exact";
  j["e_hf"] = run.cc.e_hf;
  j["e_nuc"] = run.rhf.e_nuc;
  if (std::isfinite(run.rhf.stability_eigenvalue)) j["stability_eigenvalue"] = run.rhf.stability_eigenvalue;
  if (std::isfinite(run.rhf.singlet_stability_eigenvalue))
    j["singlet_stability_eigenvalue"] = run.rhf.singlet_stability_eigenvalue;
  if (run.rhf.stability_follows > 0) {
    j["stability_follows"] = run.rhf.stability_follows;
    j["e_before_follow"] = run.rhf.energy_before_follow;  // (as nnvmc scf names it)
  }
  j["e_ccsd"] = run.cc.e_ccsd;
  j["t1_diagnostic"] = run.cc.t1_diagnostic;
  j["d1_diagnostic"] = run.cc.d1_diagnostic;
  j["energy_tolerance"] = a.energy_tolerance;
  j["residual_tolerance"] = a.residual_tolerance;
  j["e_corr"] = run.cc.e_corr;
  if (a.triples) {  // null when not computed, never a (T) of 0
    j["e_t"] = triples_computed(run) ? nlohmann::json(run.cc.e_t + 0.0) : nlohmann::json();
    j["e_ccsd_t"] = triples_computed(run) ? nlohmann::json(run.cc.e_ccsd_t) : nlohmann::json();
    j["seconds_triples"] = run.cc.seconds_triples;
  }
  if (a.explain) {
    j["plans"] = run.cc.plans;
    j["plans_not_shown"] = run.cc.plans_not_shown;
  }
  j["iterations"] = run.cc.iterations;
  j["converged"] = run.cc.converged;
  j["seconds_per_iteration"] = run.cc.seconds_per_iteration;
  j["seconds_iterations"] = run.cc.seconds_iterations;
  j["cached_integrals"] = run.cc.cached_integrals;
  j["device"] = a.device;
  j["tensor_threads"] = at::get_num_threads();  // the contractions' and (T)'s
  j["integral_threads"] = scf::resolve_threads(a.threads);  // the integrals' and the RHF's J/K builds
  j["backend"] = a.backend;
  j["resident"] = run.cc.resident;
  j["resident_bytes"] = run.cc.resident_bytes;
  j["budget_iterations_bytes"] = run.cc.budget_iterations;  // (≤ 0: no limit)
  if (a.triples) j["budget_triples_bytes"] = triples_computed(run) ? nlohmann::json(run.cc.budget_triples) : nlohmann::json();
  j["device_budget_bytes"] = run.cc.device_budget_bytes;
  j["device_peak_bytes"] = run.cc.device_peak_bytes;
  j["seconds_setup"] = run.cc.seconds_setup;
  const auto& u = run.cc.usage_per_iteration;
  j["per_iteration"] = {{"wall", u.wall}, {"user", u.user}, {"sys", u.sys}, {"minor_faults", u.minor_faults}};
  j["bytes_h2d_setup"] = run.cc.bytes_h2d_setup;
  j["bytes_h2d_per_iteration"] = run.cc.bytes_h2d_per_iteration;
  j["bytes_d2h_per_iteration"] = run.cc.bytes_d2h_per_iteration;
  j["seconds_scf"] = run.seconds_scf;
  j["seconds_integrals"] = run.seconds_integrals;
  for (const auto& [term, st] : run.cc.terms)
    j["terms"][term] = {{"seconds", st.seconds}, {"cpu_seconds", st.cpu_seconds}, {"sys_seconds", st.sys_seconds},
                        {"minor_faults", st.minor_faults}, {"copy_bytes", st.copy_bytes}, {"bytes_h2d", st.bytes_h2d},
                        {"bytes_d2h", st.bytes_d2h}, {"flops", st.flops}, {"operand_bytes", st.operand_bytes},
                        {"batches", st.batches}, {"peak_bytes", st.peak_bytes}, {"split", st.strategy}};
  std::cout << json_text(j, 2) << std::endl;
}

}  // namespace

void add_ccsd_command(CLI::App& app) {
  auto a = std::make_shared<CcsdArgs>();
  CLI::App* cmd = app.add_subcommand("ccsd", "closed-shell CCSD / CCSD(T) from an RHF reference");
  cmd->add_option("molecule", a->molecule, "molecule name in configs/molecules, or a .yaml/.xyz file")->required();
  add_molecule_state_flags(cmd, a->state);
  cmd->add_option("--basis", a->basis, "basis set (default cc-pVDZ): " + scf::available_bases_list(scf::default_basis_dir()) + ", or an NWChem-format file (a path with a '/' or ending in .nw)");
  CLI::Option* cholesky =
      cmd->add_option("--cholesky", a->cholesky,
                      "Cholesky threshold tau of the AO ERIs, in [0, 0.01] (default: conventional integrals); "
                      "1e-5 is usual. Error of E(CCSD), H2O/cc-pVDZ: 1e-5 2 uEh, 1e-4 0.04 mEh, 1e-3 0.2 mEh, "
                      "1e-2 17 mEh")
          ->check(finite_in(0, 1e-2));  // larger thresholds drop the integrals (no vectors at all above the largest)
  cmd->add_flag("--exact-scf", a->exact_scf,
                "with --cholesky: the RHF on exact ERIs (default: its J/K from the same Cholesky vectors, "
                "decomposed once, as Psi4's scf_type cd)")
      ->needs(cholesky);
  cmd->add_option("--memory", a->memory,
                  "working-memory budget, e.g. 2GiB, or auto (default); with --backend cublas the GPU memory the "
                  "staged backend may hold");
  cmd->add_option("--split", a->split,
                  "how a contraction over the --memory budget is split into batches: x (every output axis by one "
                  "common factor) | c (output axes in uneven blocks that fill the budget, never the Cholesky axis) | "
                  "auto (the cheapest of the plans that fit, by the cost model; default) | none (refused: a budget "
                  "error)")
      ->check(CLI::IsMember({"c", "x", "auto", "none"}));
  cmd->add_option("--backend", a->backend, "GEMM backend: torch | cublas")->check(CLI::IsMember({"torch", "cublas"}));
  cmd->add_option("--device", a->device, "execution device: cpu | cuda | cuda:N")->check(device_name());
  cmd->add_option("--max-iterations", a->max_iterations, "CCSD iterations before giving up (default 100)")
      ->check(integer_in(1, INT_MAX));
  cmd->add_option("--energy-tolerance", a->energy_tolerance,
                  strfmt("converged when the energy changes by less than this, in Eh (default %g) ...",
                         a->energy_tolerance))
      ->check(finite_in(1e-14, 1e-3));
  cmd->add_option("--residual-tolerance", a->residual_tolerance,
                  strfmt("... and the amplitudes by less than this (norm of the update; default %g)",
                         a->residual_tolerance))
      ->check(finite_in(1e-12, 1e-2));
  cmd->add_option("--diis-size", a->diis_size,
                  strfmt("DIIS vectors kept for the amplitude extrapolation (default %d; 0: plain Jacobi updates)",
                         a->diis_size))
      ->check(integer_in(0, 64));
  cmd->add_flag("--allow-unconverged", a->allow_unconverged,
                "report the last iterate instead of failing when not converged (timing runs)");
  cmd->add_flag("--frozen-core", a->frozen_core,
                "freeze the core orbitals: 1 per Li-Ne atom, 5 per Na-Ar, 9 per K-Kr, none for H and He (as Psi4's "
                "freeze_core true on neutral atoms)");
  cmd->add_flag("--triples", a->triples, "add the (T) correction");
  cmd->add_flag("--json", a->json, "print a JSON summary");
  cmd->add_flag("--no-cached-integrals", a->no_cache,
                "dress the integrals every iteration instead of keeping the t1-independent blocks (for comparison: 2-7x slower, and with conventional integrals more memory, not less); without it the blocks are kept always with conventional integrals and, with --cholesky, when they fit half of --memory");
  cmd->add_option("--resident", a->resident,
                  "auto | on | off: keep integrals, amplitudes and DIIS on --device for the whole run when they "
                  "fit half of --memory (auto: on a GPU with the torch backend; off: each contraction uploads "
                  "its operands)");
  add_scf_convergence_flags(cmd, a->scf, a->scf_text, "--scf-max-iter", false);
  add_threads_flag(cmd, a->threads,
                   "threads of the integrals, the Cholesky decomposition, the contractions and (T) (0: the "
                   "integrals on every core, the rest on libtorch's default, OMP_NUM_THREADS or every core)");
  cmd->add_flag("--explain", a->explain, "print the contraction plans of every term (each distinct one, up to eight per term)");
  cmd->callback([a] { run_ccsd_command(*a); });
}

}  // namespace nnvmc::app
