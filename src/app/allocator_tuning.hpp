#pragma once
/// @file allocator_tuning.hpp
/// glibc malloc settings for nnvmc's allocation pattern: every iteration frees and re-allocates
/// the same large tensors. By default glibc serves blocks above 128 KiB–32 MiB with a fresh
/// mmap and returns them on free, so each iteration page-faults its working set again (system
/// time, and first-touch cost in user time). nnvmc keeps freed memory in the heap instead:
/// measured LiH SPRING 0.332 → 0.310–0.317 s/iteration (system time 0.6 → 0.17 s over 20
/// iterations), conventional CCSD (H2O)5 3.68 → 3.51 s/iteration with no page faults in steady
/// state. The process's resident memory then stays at its peak until it exits.
/// Set NNVMC_MALLOC=default to keep glibc's defaults.

namespace nnvmc::app {

/// Applies the settings above (glibc only; elsewhere, or with NNVMC_MALLOC=default, nothing).
/// @return true when they were applied
bool tune_allocator();

}  // namespace nnvmc::app
