#include "batching/chunk_fit.hpp"

#include <algorithm>
#include <optional>

#include "batching/held_memory.hpp"
#include "batching/peak_memory.hpp"
#include "core/errors.hpp"

namespace nnvmc::batching {

ChunkFit fit_chunk(const std::function<void(std::int64_t)>& probe, std::int64_t n_items,
                   const MemoryBudget& budget, const ChunkFitOptions& o) {
  const std::int64_t k = std::max<std::int64_t>(1, std::min(n_items, o.probe_items));
  ChunkFit fit;
  fit.held_bytes = o.subtract_held ? held_bytes(o.cuda_device) : 0;
  // On the CPU the probes run under a cap of what the budget leaves them, so an item far too
  // large for this machine is refused by the allocator instead of by the kernel's OOM killer.
  const bool capped = o.cuda_device < 0 && !budget.is_unlimited();
  const std::int64_t cap_bytes = std::max<std::int64_t>(
      budget.scaled(o.margin).bytes() - fit.held_bytes - std::max<std::int64_t>(o.reserved_bytes, 0), 0);
  const auto peak_of = [&](std::int64_t items) {
    PeakMemoryScope scope(o.cuda_device);
    std::optional<WorkingMemoryCap> cap;
    if (capped) cap.emplace(cap_bytes);
    probe(items);
    return scope.peak_bytes();
  };
  const std::string held_note = fit.held_bytes > 0 ? ", " + format_bytes(double(fit.held_bytes)) +
                                                         " of it held by captured CUDA graphs (run.cuda_graphs)"
                                                   : std::string();
  std::int64_t p1 = 0;
  try {
    // One item twice: the first call may allocate what later calls keep and reuse (gradient
    // buffers a backward creates, caches), which would count as fixed working memory and, being
    // absent from the k-item probe, make the per-item cost look like nothing (HF pretraining
    // measured 1 B per walker and ran 200000 walkers in one pass, 2.6 GB over a 64 MiB budget).
    (void)peak_of(1);
    p1 = peak_of(1);
  } catch (const WorkingMemoryExceeded& e) {
    throw BudgetError(o.key + " = " + format_bytes(double(budget.bytes())) + " is too small for one " + o.what +
                      ": its working memory would pass the " + format_bytes(double(cap_bytes)) +
                      " the budget leaves it (after the safety margin" + held_note +
                      "), and the measurement was stopped there (" + e.what() +
                      "); raise the budget if this machine has the memory, or use a smaller molecule or model");
  }
  std::int64_t pk = p1;
  bool pk_measured = k > 1;
  if (k > 1) {
    try {
      pk = peak_of(k);
    } catch (const WorkingMemoryExceeded&) {
      pk_measured = false;  // fewer than k items fit: take one item's peak as the per-item cost (an upper bound)
    }
  }
  fit.bytes_per_item = std::max<std::int64_t>(pk_measured ? (pk - p1) / (k - 1) : p1, 1);
  fit.fixed_bytes = std::max<std::int64_t>(p1 - fit.bytes_per_item, 0) + std::max<std::int64_t>(o.reserved_bytes, 0);
  const MemoryBudget usable = budget.scaled(o.margin);
  const std::int64_t one = std::max(p1 + o.reserved_bytes, fit.fixed_bytes + fit.bytes_per_item) + fit.held_bytes;
  if (one > usable.bytes())
    throw BudgetError(o.key + " = " + format_bytes(double(budget.bytes())) + " is too small for one " + o.what +
                      ": it needs " + format_bytes(double(one)) + " of working memory (" +
                      format_bytes(double(one) / o.margin) + " with the safety margin" + held_note +
                      "); raise the budget");
  fit.chunk = usable.max_batch(fit.bytes_per_item, fit.fixed_bytes + fit.held_bytes);
  return fit;
}

}  // namespace nnvmc::batching
