#pragma once
/// @file budget.hpp
/// A working-memory budget in bytes, shared by the contraction planner (CCSD) and the
/// VMC side (walker chunk sizes). Torch-free.
#include <cstdint>
#include <string>

#include "core/host_memory.hpp"

namespace nnvmc::batching {

using nnvmc::HostMemory;   // (core/host_memory.hpp)
using nnvmc::host_memory;

/// A byte budget for working memory (buffers a computation allocates, not its inputs).
class MemoryBudget {
 public:
  /// Fraction of the free memory that "auto" takes.
  static constexpr double kAutoFraction = 0.6;

  /// A budget of `bytes` (> 0). @throws BudgetError when bytes <= 0.
  explicit MemoryBudget(std::int64_t bytes);

  /// An unlimited budget (max_batch returns the number of items asked for).
  static MemoryBudget unlimited();

  /// Parses "auto" (kAutoFraction of free memory on `device`: host_memory().available
  /// for "cpu", CUDA free memory for "cuda[:N]") or a byte count like "2GiB" / "500MB".
  /// `key` names the option in error messages. `reserved` bytes are spoken for (e.g. the
  /// optimizer state a training allocates later): "auto" takes its fraction of room_bytes(device)
  /// less them (at least 1 byte).
  /// @throws ConfigError, BudgetError.
  static MemoryBudget parse(const std::string& text, const std::string& device = "cpu",
                            const std::string& key = "memory", std::int64_t reserved = 0);

  /// What "auto" stands for on the CPU in this process from now on: `bytes` (> 0), or 0 for
  /// kAutoFraction of host_memory().available. (A comparison's cell takes its share of the
  /// memory this way, while its config and checkpoint keep saying "auto".)
  static void set_cpu_auto_bytes(std::int64_t bytes);

  /// How many processes share each CUDA device from now on (≥ 1, default 1): "auto" on a CUDA
  /// device is then kAutoFraction of its free memory divided by `sharers`. Each process measures
  /// the free memory before the others allocate (the caching allocator is lazy), so without the
  /// division K processes on one GPU would plan on K × 60 % of it. Set for ranks that share a GPU
  /// (CCSD's ranks, more VMC ranks than GPUs) and for a comparison's cells running at once.
  static void set_cuda_auto_sharers(int sharers);

  /// How many processes share the host's memory from now on (≥ 1, default 1; the ranks of a node):
  /// an explicit CPU budget is then refused when that many of it exceed the host's memory (two
  /// ranks of 15 GiB each on a 23.5 GiB machine were accepted, one of 30 GiB refused: a user audit).
  static void set_cpu_sharers(int sharers);

  /// The memory this process may use on `device`, which "auto" takes kAutoFraction of: its share
  /// when set_cpu_auto_bytes or set_cuda_auto_sharers divide the device between processes (on the
  /// CPU less what the process's anonymous resident memory grew by since the share was set: the
  /// model it built since), else what is free. @throws BudgetError as free_bytes
  static std::int64_t room_bytes(const std::string& device);

  /// The bytes "auto" stands for on `device` with `free` bytes free (after set_cpu_auto_bytes and
  /// set_cuda_auto_sharers).
  static std::int64_t auto_bytes(const std::string& device, std::int64_t free);

  /// Bytes of free memory on `device` ("cpu": host_memory().available; "cuda[:N]": cudaMemGetInfo,
  /// needs NNVMC_WITH_CUDA). @throws BudgetError when it cannot be determined.
  static std::int64_t free_bytes(const std::string& device);

  std::int64_t bytes() const { return bytes_; }        ///< the budget (INT64_MAX when unlimited)
  bool is_unlimited() const;                          ///< true for unlimited()

  /// Largest number of items whose working memory fits: floor((bytes − fixed_bytes) /
  /// bytes_per_item), at least 1. Use it to size walker chunks:
  /// `chunk = budget.max_batch(bytes_per_walker, model_bytes)`.
  /// @throws BudgetError (stating both numbers) when even one item does not fit.
  std::int64_t max_batch(std::int64_t bytes_per_item, std::int64_t fixed_bytes = 0) const;

  /// Number of chunks of at most max_batch(bytes_per_item, fixed_bytes) items that cover
  /// n_items. @throws BudgetError as max_batch.
  std::int64_t chunks(std::int64_t n_items, std::int64_t bytes_per_item,
                      std::int64_t fixed_bytes = 0) const;

  /// A budget of `fraction` of this one (at least 1 byte).
  MemoryBudget scaled(double fraction) const;

 private:
  std::int64_t bytes_;
};

/// "1.50 GiB"-style text for a byte count.
std::string format_bytes(double bytes);
/// format_bytes rounded up in its last digit: a size to give that is at least `bytes` (advice
/// printed rounded to nearest could fall short of what it asks, and warn again).
std::string format_bytes_up(double bytes);

}  // namespace nnvmc::batching
