#pragma once
/// @file plan.hpp
/// Contraction plans: pairwise order, per-step layouts, and the block split that makes
/// every batch fit a byte budget. Torch-free; built by make_plan(), run by execute().
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "batching/cost_model.hpp"
#include "batching/einsum.hpp"

namespace nnvmc::batching {

class Workspace;

/// How an over-budget contraction is split into batches.
enum class SplitStrategy {
  none,  ///< never split; over budget → BudgetError
  x,     ///< even split of all free (output) axes by one common factor
  c,     ///< output axes only, asymmetric blocks filling the budget; never the Cholesky axis
  automatic,  ///< lowest modelled cost among the unsplit, x and c plans that fit
};
SplitStrategy parse_split(const std::string& text);  ///< "none"|"x"|"c"|"auto"; @throws InputError
std::string to_string(SplitStrategy s);

/// Which GEMM implementation runs the batches.
enum class BackendKind {
  torch,   ///< libtorch matmul on the plan's device (CPU or CUDA)
  cublas,  ///< cuBLAS on raw device buffers (needs NNVMC_WITH_CUDA)
};
BackendKind parse_backend(const std::string& text);  ///< "torch"|"cublas"; @throws InputError
std::string to_string(BackendKind b);

/// Options of one planned contraction.
struct PlanOptions {
  std::int64_t budget_bytes = 0;             ///< working-memory budget; <= 0: unlimited
  SplitStrategy split = SplitStrategy::automatic;  ///< split strategy when over budget
  BackendKind backend = BackendKind::torch;  ///< GEMM backend
  std::string device = "cpu";                ///< execution device: cpu | cuda | cuda:N
  std::optional<CostModel> cost;             ///< rates; unset: CostModel::measure(device)
  std::vector<std::pair<int, int>> path;     ///< explicit pairwise order (ids as in Plan::steps); empty: search
  std::string protected_labels;              ///< labels C-split never splits; empty: the longest contracted label
  /// Buffers reused across executions (e.g. one per CCSD run); null: each execution reuses
  /// its buffers across its own batches only (workspace.hpp).
  std::shared_ptr<Workspace> workspace;
};

/// Where a step's operand comes from and whether it is copied before the GEMM.
struct StepInput {
  int id = 0;            ///< < n_operands: an input operand; else intermediate (id − n_operands)
  std::string labels;    ///< memory order of the tensor as it arrives
  std::string summed;    ///< labels summed out of it before the GEMM (in no other tensor)
  bool transpose_copy = false;  ///< permuted into a contiguous GEMM layout (a counted copy)
  bool trans = false;    ///< used as [batch, inner, outer] (BLAS transpose) rather than [batch, outer, inner]
  bool hoisted = false;  ///< an operand no split label touches: its copy/reduction is made once, for all batches
  bool strided = false;  ///< its batch slice is used in place as a strided matrix (leading dimension > width)
};

/// One pairwise contraction C[batch, m, n] = Σ_k A[batch, m, k] B[batch, k, n].
struct Step {
  StepInput a, b;        ///< left and right operands
  std::string batch, m, k, n;  ///< label groups, each in GEMM order
  std::string result;    ///< labels of the result = batch + m + n
  bool final = false;    ///< writes the einsum output
  double flops = 0;      ///< 2·|batch|·|m|·|n|·|k| for the full (unsplit) extents
  /// Tiles: the GEMM-layout copy of operand `tile_side` (0 = a, 1 = b; −1: none) is made
  /// `tile` entries at a time of the first label of its free group (m or n), each tile's GEMM
  /// writing its own rows/columns of the result, so the copy stays in cache (Plan::tile_bytes).
  int tile_side = -1;
  std::int64_t tile = 0;  ///< tile extent of that label (< its batch extent)
};

/// A complete plan; `blocks` maps each split label to its block size.
struct Plan {
  EinsumSpec spec;                         ///< the einsum
  std::map<char, std::int64_t> extents;    ///< every label's full extent
  std::vector<Step> steps;                 ///< pairwise steps in execution order
  SplitStrategy strategy = SplitStrategy::none;  ///< strategy that chose `blocks`
  std::map<char, std::int64_t> blocks;     ///< split labels → block size (< extent)
  std::vector<bool> resident;              ///< per operand: copied to the device once (CUDA, host operands)
  bool operands_on_device = true;          ///< operands already live on the execution device
  bool out_on_device = true;               ///< the output lives on the execution device
  bool out_direct = false;                 ///< final GEMM writes/accumulates straight into `out`
  std::int64_t budget_bytes = 0;           ///< budget the plan was made for (<= 0: unlimited)
  std::int64_t elem_bytes = 8;             ///< bytes per element
  std::int64_t tile_bytes = 0;             ///< layout copies above this are made in tiles (CPU, torch backend); 0: never
  bool strided_views = false;              ///< GEMMs take strided operand slices without a copy (torch backend, CPU)
  /// The GEMM backend stages host operands through the device itself (the cuBLAS backend): every
  /// GEMM operand crosses the link (slices of the operands and hoisted copies once per
  /// execution, as the backend keeps them; per-batch copies and intermediates every batch) and
  /// every GEMM result comes back; layout copies run on the host.
  bool staged = false;
  // estimates (totals over all batches)
  double flops = 0;                        ///< incl. recomputation caused by the split
  double transfer_bytes = 0;               ///< host↔device bytes
  double copy_bytes = 0;                   ///< transposition/reduction copies
  double device_copy_bytes = 0;            ///< of copy_bytes, those a staged plan makes on the device
  std::int64_t peak_bytes = 0;             ///< accounted peak of one batch (+ resident operands)
  std::int64_t batches = 1;                ///< number of batches
  double modelled_seconds = 0;             ///< cost-model time
  CostModel cost;                          ///< rates used
  std::vector<std::string> notes;          ///< candidates considered (for explain)

  std::int64_t n_blocks(char label) const;  ///< blocks along `label` (1 when not split)
  std::string explain() const;              ///< human-readable plan
};

/// What one execution did (measured, not modelled).
struct ExecReport {
  double flops = 0;                 ///< floating-point operations of the GEMMs
  std::int64_t bytes_h2d = 0;       ///< host → device bytes
  std::int64_t bytes_d2h = 0;       ///< device → host bytes
  std::int64_t copy_bytes = 0;      ///< bytes written by layout copies, reductions and output writes
  std::int64_t peak_bytes = 0;      ///< accounted peak of executor-owned buffers
  std::int64_t batches = 0;         ///< batches run
  double seconds = 0;               ///< wall time
  std::string strategy;             ///< split strategy used
  double gflops() const { return seconds > 0 ? flops / seconds * 1e-9 : 0; }
  ExecReport& operator+=(const ExecReport& o);  ///< sums counters, max of peaks
};

/// Plans `spec` for operands of the given shapes. `operands_on_device` / `out_on_device`:
/// whether they already live on options.device (else host↔device copies are planned).
/// @throws InputError on bad specs/shapes, BudgetError when no allowed split fits.
Plan make_plan(const EinsumSpec& spec, const std::vector<std::vector<std::int64_t>>& shapes,
               const PlanOptions& options, bool operands_on_device = true, bool out_on_device = true,
               std::int64_t elem_bytes = 8);

}  // namespace nnvmc::batching
