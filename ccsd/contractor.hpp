#pragma once
/// @file contractor.hpp
/// Runs CCSD's heavy contractions through the batching layer with one set of plan options
/// and keeps per-term statistics (time, FLOPs, batches, peak bytes) and plans.
#include <torch/types.h>

#include <map>
#include <string>
#include <vector>

#include "batching/plan.hpp"

namespace nnvmc::ccsd {

/// Accumulated statistics of one named term.
struct TermStats {
  double seconds = 0;             ///< wall time
  double cpu_seconds = 0;         ///< process CPU time (user + system)
  double sys_seconds = 0;         ///< of which system (kernel) time
  std::int64_t minor_faults = 0;  ///< page faults (first touches of fresh memory)
  double copy_bytes = 0;          ///< bytes written by layout copies, reductions and output writes
  double flops = 0;               ///< GEMM FLOPs
  std::int64_t batches = 0;       ///< batches run
  std::int64_t peak_bytes = 0;    ///< largest accounted peak
  std::int64_t calls = 0;         ///< contractions run
  std::string strategy;           ///< split strategy of the last call
};

/// Planned contractions with statistics.
class Contractor {
 public:
  /// `options`: budget, split, backend, device of every contraction; `explain`: keep plans.
  explicit Contractor(batching::PlanOptions options, bool explain = false);

  /// out = einsum(spec, ops), allocated like ops[0]; `term` names the statistics entry.
  torch::Tensor operator()(const std::string& term, const std::string& spec,
                           const std::vector<torch::Tensor>& ops);

  const std::map<std::string, TermStats>& stats() const { return stats_; }  ///< per term
  const std::vector<std::string>& plans() const { return plans_; }  ///< first plan of each term (explain)
  const batching::PlanOptions& options() const { return options_; }  ///< the plan options
  void reset_stats() { stats_.clear(); }                             ///< forget statistics

 private:
  batching::PlanOptions options_;
  bool explain_;
  std::map<std::string, TermStats> stats_;
  std::vector<std::string> plans_;
};

}  // namespace nnvmc::ccsd
