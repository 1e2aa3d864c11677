#pragma once
/// @file chunk_fit.hpp
/// Sizes chunks of a batched computation from a memory budget by measuring it: the peak
/// working memory of one item and of a few items (PeakMemoryScope) gives fixed + per-item
/// bytes, and the chunk is the largest one predicted to fit. Used for walker chunks of local
/// energies and of per-sample gradients. Torch-free header.
#include <cstdint>
#include <functional>
#include <string>

#include "batching/budget.hpp"

namespace nnvmc::batching {

/// What to measure and how much of the budget to use.
struct ChunkFitOptions {
  double margin = 0.85;             ///< fraction of the budget the predicted peak may use
  std::int64_t reserved_bytes = 0;  ///< bytes the caller keeps outside the chunks (e.g. outputs)
  std::int64_t probe_items = 8;     ///< items of the second measurement (the first is one item)
  std::string key = "memory budget";  ///< names the budget in error messages
  std::string what = "item";          ///< names one item in error messages
  int cuda_device = -1;  ///< measure on this CUDA device's caching allocator (−1: the CPU)
  /// Leave the device's held memory (held_memory.hpp) out of the budget. False for a stage whose
  /// working memory joins the graph pool itself (a graphed local energy): its capture reuses
  /// what the pool holds rather than adding to it.
  bool subtract_held = true;
};

/// The measurement and the chunk chosen from it.
struct ChunkFit {
  std::int64_t fixed_bytes = 0;     ///< working memory independent of the chunk size
  std::int64_t bytes_per_item = 0;  ///< working memory per item
  std::int64_t chunk = 0;           ///< largest chunk predicted to fit (may exceed n_items)
  std::int64_t held_bytes = 0;      ///< held memory left out of the budget (0 unless subtract_held)
};

/// Runs `probe(1)` (twice: the first call's one-time allocations are not working memory) and
/// `probe(min(n_items, probe_items))` inside peak-memory scopes, fits
/// peak(k) = fixed + k·per_item and returns the largest k with held + reserved + fixed +
/// k·per_item ≤ margin·budget, where held is what the device holds outside the stages
/// (held_bytes(options.cuda_device): captured CUDA graphs' memory pool; 0 without
/// subtract_held). @throws BudgetError naming options.key and options.what when one item does
/// not fit.
ChunkFit fit_chunk(const std::function<void(std::int64_t)>& probe, std::int64_t n_items,
                   const MemoryBudget& budget, const ChunkFitOptions& options = {});

}  // namespace nnvmc::batching
