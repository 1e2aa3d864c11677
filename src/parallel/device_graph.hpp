#pragma once
/// @file device_graph.hpp
/// A fixed sequence of device work captured once and then replayed with one launch (CUDA
/// graphs, through libtorch's at::cuda::CUDAGraph in the nnvmc_cuda_graph plugin), with an
/// eager fallback when capture is not possible. No torch headers: the body is a callback.
///
/// The body must only read and write tensors whose storage outlives the graph and stays put
/// (static buffers, parameters updated in place), must not sync with the host, and must not
/// refer to the caller's stack (a replay does not call it again). What its owner may replace
/// between calls (the function evaluated, a parameter's storage) goes into the key: a new key
/// captures again.
///
/// Memory: a captured body's temporaries stay allocated for its replays, in one graph memory
/// pool per device that the device's graphs share (captures run one after another, and so do
/// replays, so a capture reuses what an earlier one freed). The pool is counted in batching's
/// held-memory ledger (held_memory.hpp), which chunk planners leave out of the budget: from the
/// warm-up call on, as the larger of the pool so far and the warm-up's peak working memory (what
/// the capture will keep); after a CUDA capture, as the larger of that and the pool's segments
/// (the plugin's nnvmc_cuda_graph_pool_bytes, from the caching allocator's snapshot). The
/// emulated mode keeps the same account on the CPU (nothing is really held there), so tests see
/// the planning a CUDA device gets. The entry goes when the device's last graph does.
#include <c10/core/Device.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace nnvmc::parallel {

/// What a DeviceGraph does with its body.
enum class GraphMode {
  eager,     ///< every call runs the body: graphs off, a non-CUDA device, or capture failed
  captured,  ///< CUDA: captured after a warm-up call, then replayed
  emulated,  ///< for CPU tests: the same calls as `captured` (warm-up, "capture" keeps the body
             ///< of that call, "replay" calls the kept body), so the CPU runs the code a CUDA
             ///< device captures, with the same stale-key hazards
};

/// Identifies what a captured body depends on (function identity, tensor storages).
using GraphKey = std::vector<const void*>;

class DeviceGraph {
 public:
  /// @param mode captured (only honoured on a CUDA device; eager elsewhere) or emulated
  /// @param what names the body in the single warning a failed capture logs
  DeviceGraph(GraphMode mode, c10::Device device, std::string what);
  ~DeviceGraph();
  DeviceGraph(const DeviceGraph&) = delete;
  DeviceGraph& operator=(const DeviceGraph&) = delete;

  /// Does the body's work once. With a new key: the first call runs it eagerly (warm-up:
  /// lazy initialisations, workspaces; on CUDA on the graph's own side stream), the next
  /// captures it and replays; later calls with the same key replay. An exception of the body
  /// in an eager call propagates (after a warm-up, the next call warms up again); a capture
  /// that fails (the body syncs, CUDA refuses) makes the graph eager for good, with one warning.
  void run(const GraphKey& key, const std::function<void()>& body);

  GraphMode mode() const { return mode_; }
  /// Captures taken so far (a changed key captures again).
  int captures() const { return captures_; }
  /// Replays so far.
  std::int64_t replays() const { return replays_; }
  /// Why capture failed ("" if it did not; the graph then runs eagerly for good).
  const std::string& failure() const { return failure_; }
  /// Peak working memory of the last warm-up call (what its capture keeps), bytes; 0 before.
  std::int64_t warmup_peak_bytes() const { return warmup_peak_; }
  /// Bytes the graph pool of `device` holds by the account above (0: no graph uses it).
  static std::int64_t pool_bytes(c10::Device device);

 private:
  struct Captured;  ///< the plugin's graph, or the kept body when emulated
  GraphMode mode_;
  c10::Device device_;
  std::string what_;
  GraphKey key_;
  std::unique_ptr<Captured> graph_;  ///< from the warm-up call of key_ on
  int captures_ = 0;
  std::int64_t replays_ = 0;
  std::string failure_;
  std::int64_t warmup_peak_ = 0;
  bool in_pool_ = false;  ///< counted among the users of its device's graph pool
  void capture(const std::function<void()>& body);
  /// Falls back to eager calls for good, with one warning.
  void give_up(const std::string& why);
  /// Runs a warm-up call (`call`) measuring its peak working memory; the pool grows to it.
  void warm_up(const std::function<void()>& call);
  /// Counts this graph among the users of device `dev`'s pool (caller holds the pool lock).
  void join_pool_locked(int dev);
  /// Stops using the device's pool (the last user takes the pool's entry out of the ledger).
  void leave_pool();
};

/// True on the thread that is running a graph body whose work is fixed for every replay: a CUDA
/// capture, or an emulated replay (which stands for one). Host-side decisions taken inside
/// (refitting a chunk size, probe passes) would be recorded and repeated by every replay, so
/// callers take them outside; the warm-up call and eager runs see false.
bool in_graph_body();

/// Whether CUDA graph capture is available in this process (the plugin loads); the reason
/// otherwise. Cheap after the first call.
bool cuda_graphs_available(std::string* why = nullptr);

}  // namespace nnvmc::parallel
