#pragma once
/// @file op_counts.hpp
/// Counts the ATen operators a piece of code dispatches, with libtorch's (Kineto) profiler:
/// the number a GPU run launches as kernels, and the ops that force a host–device sync.
#include <functional>
#include <map>
#include <string>

namespace nnvmc {

/// Operators dispatched by one run of a function, by name.
struct OpCounts {
  std::map<std::string, long> by_name;  ///< "aten::mm" → count (nested ops counted too)
  long aten = 0;                        ///< all "aten::" operators
  long syncs = 0;                       ///< ops that read device data on the host (see is_sync_op)
  /// Estimated kernel launches on a GPU: "aten::" operators called outside any other ATen
  /// operator (an autograd node's ops count; the CPU's per-matrix loop inside a bmm does not),
  /// less the ones that only make views or read metadata (is_view_op).
  long launches = 0;
};

/// True for operators that only create views or touch metadata (view, reshape, transpose,
/// slice, expand, detach, resolve_conj, empty…): no kernel on a GPU.
bool is_view_op(const std::string& name);

/// True for the operators that make the host wait for the device: `_local_scalar_dense` (what
/// every `.item()` and `bool(tensor)` ends in) and ops whose output shape depends on the data
/// (`nonzero`, `masked_select`, `unique`…). A device-to-host `copy_` also syncs but looks like
/// any copy on the CPU; it is not counted.
bool is_sync_op(const std::string& name);

/// Runs `f` under the profiler (CPU activities) on this thread and counts its operators.
/// @throws Error when another profiler is active
OpCounts count_ops(const std::function<void()>& f);

}  // namespace nnvmc
