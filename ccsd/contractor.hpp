#pragma once
/// @file contractor.hpp
/// Runs CCSD's heavy contractions through the batching layer with one set of plan options
/// and keeps per-term statistics (time, FLOPs, batches, peak bytes) and plans.
#include <torch/types.h>

#include <map>
#include <optional>
#include <set>
#include <memory>
#include <string>
#include <vector>

#include "batching/plan.hpp"

#include "batching/device_stage_timing.hpp"
#include "core/timer.hpp"

namespace nnvmc::batching {
class GemmBackend;
}

namespace nnvmc::ccsd {

/// Accumulated statistics of one named term.
struct TermStats {
  /// Wall time; on a CUDA device, the device's time from the term's start to its end (CUDA
  /// events, so no wait for the device after each term; gaps between terms count in none).
  double seconds = 0;
  double cpu_seconds = 0;         ///< process CPU time (user + system)
  double sys_seconds = 0;         ///< of which system (kernel) time
  std::int64_t minor_faults = 0;  ///< page faults (first touches of fresh memory)
  double copy_bytes = 0;          ///< bytes written by layout copies, reductions and output writes
  std::int64_t bytes_h2d = 0;     ///< host → device bytes (executor and backend)
  std::int64_t bytes_d2h = 0;     ///< device → host bytes
  double flops = 0;               ///< GEMM FLOPs
  /// Bytes of the contractions' distinct operand elements and outputs, each counted once: the
  /// least memory traffic any implementation has (flops / operand_bytes is the arithmetic
  /// intensity a roofline places the term by; bench/ccsd_term_roofline.py).
  double operand_bytes = 0;
  std::int64_t batches = 0;       ///< batches run
  std::int64_t peak_bytes = 0;    ///< largest accounted peak
  std::int64_t calls = 0;         ///< contractions run (or sections timed)
  std::string strategy;           ///< split strategy of the last call
};

/// Planned contractions with statistics.
class Contractor {
 public:
  /// `options`: budget, split, backend, device of every contraction; `explain`: keep plans.
  /// `backend`: runs every contraction's GEMMs and lives as long as the contractor (operands it
  /// keeps resident stay on the device from one iteration to the next); null: a backend of
  /// options.backend per contraction.
  explicit Contractor(batching::PlanOptions options, bool explain = false,
                      std::shared_ptr<batching::GemmBackend> backend = nullptr);
  ~Contractor();
  Contractor(const Contractor&) = delete;
  Contractor& operator=(const Contractor&) = delete;

  /// out = einsum(spec, ops), allocated like ops[0]; `term` names the statistics entry.
  torch::Tensor operator()(const std::string& term, const std::string& spec,
                           const std::vector<torch::Tensor>& ops);

  /// Times a stretch of work that is not a contraction (the amplitude update, DIIS, the energy)
  /// under `term` while alive (RAII; on a CUDA device, between two CUDA events, as every
  /// contraction is, so each term's time is its own kernels'), so the per-term table shows it; the residual's own
  /// elementwise work stays outside every term. Such terms have no FLOPs unless `flops` names
  /// those of work done outside the contractor (a BLAS call made directly). Do not open one
  /// around a contraction: its time would be counted twice.
  class Section {
   public:
    Section(Contractor& c, std::string term, double flops = 0);
    ~Section();
    Section(const Section&) = delete;
    Section& operator=(const Section&) = delete;

   private:
    Contractor& c_;
    std::string term_;
    double flops_;
    double cpu0_, sys0_;
    std::int64_t faults0_;
    std::optional<StageTimers::Scope> timed_;  ///< its time in c_.term_times_
  };

  /// Per term. On a CUDA device, first waits for the device to finish the terms' work so far
  /// (their times are known only then).
  const std::map<std::string, TermStats>& stats() const;
  /// Each distinct plan of each term (explain), in the order first made: up to kPlansPerTerm
  /// per term (plans_not_shown() counts the others).
  const std::vector<std::string>& plans() const { return plans_; }
  /// Per term: its distinct plans beyond kPlansPerTerm (explain).
  const std::map<std::string, int>& plans_not_shown() const { return more_plans_; }
  static constexpr int kPlansPerTerm = 8;
  const batching::PlanOptions& options() const { return options_; }  ///< the plan options
  /// Plans the contractions from now on within `bytes` (> 0; a budget measured again).
  void set_budget(std::int64_t bytes) { options_.budget_bytes = bytes; }
  void reset_stats();                                                ///< forget statistics
  /// Host → device / device → host bytes of every contraction so far (not reset by reset_stats).
  std::int64_t bytes_h2d() const { return bytes_h2d_; }
  std::int64_t bytes_d2h() const { return bytes_d2h_; }

 private:
  batching::PlanOptions options_;
  bool explain_;
  mutable std::map<std::string, TermStats> stats_;  ///< seconds copied from term_times_ when read
  /// On a CUDA device: each term's device time, with no wait per term (a wait per term idles the
  /// GPU between launches: (T) has thousands of terms per run).
  batching::DeviceStageTiming device_timing_;
  StageTimers term_times_;  ///< each term's seconds (after device_timing_, which it uses)
  std::vector<std::string> plans_;
  std::set<std::string> seen_plans_;             ///< plans_ entries so far
  std::map<std::string, int> more_plans_;        ///< per term: distinct plans beyond kPlansPerTerm
  std::map<std::string, int> plans_per_term_;    ///< per term: distinct plans kept
  std::shared_ptr<batching::GemmBackend> backend_;
  std::int64_t bytes_h2d_ = 0, bytes_d2h_ = 0;
};

}  // namespace nnvmc::ccsd
