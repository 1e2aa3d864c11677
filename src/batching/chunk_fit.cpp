#include "batching/chunk_fit.hpp"

#include <algorithm>

#include "batching/held_memory.hpp"
#include "batching/peak_memory.hpp"
#include "core/errors.hpp"

namespace nnvmc::batching {

ChunkFit fit_chunk(const std::function<void(std::int64_t)>& probe, std::int64_t n_items,
                   const MemoryBudget& budget, const ChunkFitOptions& o) {
  const std::int64_t k = std::max<std::int64_t>(1, std::min(n_items, o.probe_items));
  const auto peak_of = [&](std::int64_t items) {
    PeakMemoryScope scope(o.cuda_device);
    probe(items);
    return scope.peak_bytes();
  };
  const std::int64_t p1 = peak_of(1), pk = k > 1 ? peak_of(k) : p1;
  ChunkFit fit;
  fit.bytes_per_item = std::max<std::int64_t>(k > 1 ? (pk - p1) / (k - 1) : p1, 1);
  fit.fixed_bytes = std::max<std::int64_t>(p1 - fit.bytes_per_item, 0) + std::max<std::int64_t>(o.reserved_bytes, 0);
  fit.held_bytes = o.subtract_held ? held_bytes(o.cuda_device) : 0;
  const MemoryBudget usable = budget.scaled(o.margin);
  const std::int64_t one = std::max(p1 + o.reserved_bytes, fit.fixed_bytes + fit.bytes_per_item) + fit.held_bytes;
  if (one > usable.bytes())
    throw BudgetError(o.key + " = " + format_bytes(double(budget.bytes())) + " is too small for one " + o.what +
                      ": it needs " + format_bytes(double(one)) + " of working memory (" +
                      format_bytes(double(one) / o.margin) + " with the safety margin" +
                      (fit.held_bytes > 0 ? ", " + format_bytes(double(fit.held_bytes)) +
                                                " of it held by captured CUDA graphs (run.cuda_graphs)"
                                          : std::string()) +
                      "); raise the budget");
  fit.chunk = usable.max_batch(fit.bytes_per_item, fit.fixed_bytes + fit.held_bytes);
  return fit;
}

}  // namespace nnvmc::batching
