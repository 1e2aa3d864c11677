#pragma once
/// @file plan_detail.hpp
/// Planner internals shared by the planner and the executor (one place decides which
/// buffers a batch allocates, so the executor's accounting equals the planner's estimate).
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "batching/plan.hpp"

namespace nnvmc::batching::detail {

using Extents = std::map<char, std::int64_t>;

/// Whether the label string `labels` holds the label `c`.
inline bool has(const std::string& labels, char c) { return labels.find(c) != std::string::npos; }

/// Product of the extents of `labels`.
std::int64_t volume(const std::string& labels, const Extents& ext);

/// Block extent of every label for the largest batch of `plan` (split labels → block size).
Extents batch_extents(const Plan& plan);

/// Pairwise path (ids: operands 0..n−1, step s creates id n+s): exhaustive search by FLOPs
/// for up to 5 operands (preferring paths whose largest intermediate fits `budget_bytes`),
/// greedy (cheapest step first) beyond.
std::vector<std::pair<int, int>> search_path(const EinsumSpec& spec, const Extents& ext,
                                             std::int64_t budget_bytes, std::int64_t elem_bytes);

/// Steps (label groups, GEMM orders, FLOPs) for `path`. @throws InputError on a bad path.
std::vector<Step> build_steps(const EinsumSpec& spec, const Extents& ext,
                              const std::vector<std::pair<int, int>>& path);

/// Whether the view of a contiguous tensor with memory order `labels`, restricted to a box
/// with extents `box` (full extents `full`), is itself contiguous.
bool box_is_contiguous(const std::string& labels, const Extents& full, const Extents& box);

/// Fills the copy/transpose decisions of every step and plan.out_direct for plan.blocks.
void assign_layouts(Plan& plan);

/// Bytes of the tile buffer of `st` (tile_side >= 0) for a batch with extents `box`.
std::int64_t tile_copy_bytes(const Plan& plan, const Step& st, const Extents& box);

/// Memory and traffic of one (largest) batch, as the executor will account them.
struct BatchCost {
  std::int64_t peak_bytes = 0;      ///< peak of executor-owned buffers (incl. resident operands)
  std::int64_t copy_bytes = 0;      ///< bytes of reduction/transposition copies per batch
  std::int64_t resident_bytes = 0;  ///< operands copied to the device once
  std::int64_t once_copy_bytes = 0; ///< copies of hoisted operands (made once, not per batch)
};
BatchCost simulate_batch(const Plan& plan);

/// Host↔device bytes of `plan` run by a staging backend (Plan::staged) that keeps every stable
/// operand it is given (StagedGemmOptions::resident_bytes large enough): slices of the operands
/// and hoisted copies cross once, per-batch copies and intermediates every batch, results come
/// back once per block (staged_gemm.cpp).
double staged_transfer_bytes(const Plan& plan);
/// Σ over the batches of `plan` of the batch volume (bytes) of a tensor with `labels`: its full
/// volume × the blocks of the split labels it lacks.
double over_batches(const Plan& plan, const std::string& labels);
/// Bytes of the layout copies a staged plan makes on the device (those of intermediates, which
/// the staged backend keeps there), counted as Plan::copy_bytes counts copies (the largest
/// batch's bytes times plan.batches, which evaluate() sets first).
double staged_device_copy_bytes(const Plan& plan);

/// Fills the plan's totals (flops, transfers, copies, peak, batches, modelled time).
void evaluate(Plan& plan);

/// Labels the C-split never splits: `protected_labels`, or else the longest contracted label.
std::string c_split_protected(const Plan& plan, const std::string& protected_labels);

/// Tries splits of `strategy` and stores the cheapest fitting one in plan (blocks, layouts,
/// totals). Returns false when none fits.
bool choose_split(Plan& plan, SplitStrategy strategy, const std::string& protected_labels);

}  // namespace nnvmc::batching::detail
