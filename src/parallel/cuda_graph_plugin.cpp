/// libnnvmc_cuda_graph.so: the C interface of cuda_graph_plugin.h over at::cuda::CUDAGraph.
/// Built only with NNVMC_WITH_CUDA; opened at run time by parallel/device_graph.cpp.
#include "parallel/cuda_graph_plugin.h"

#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <torch/version.h>

#include <cstdio>
#include <exception>
#include <map>
#include <mutex>
#include <optional>

namespace {
using PoolId = decltype(at::cuda::graph_pool_handle());  // MempoolId_t, wherever a torch version declares it

struct Graph {
  c10::DeviceIndex device;
  c10::cuda::CUDAStream side;  ///< warm-up and capture (graphs are captured on a non-default stream)
  at::cuda::CUDAGraph graph;
  bool holds_pool = false;     ///< holds a use of its device's shared pool (released when deleted)
};

int fail(char* error, size_t size, const char* what, int code = 2) {
  if (error != nullptr && size > 0) std::snprintf(error, size, "%s", what);
  cudaGetLastError();  // an invalidated capture leaves its error behind: clear it
  return code;
}

/// One graph memory pool per device, shared by every captured graph of the process. Its id is
/// kept while a captured graph uses it and forgotten when none does: the allocator frees a pool
/// nobody uses, and asserts when a capture asks for such a pool again, so the next capture takes
/// a fresh one.
struct SharedPool {
  PoolId id{0, 0};
  bool valid = false;
  int captured = 0;  ///< captured graphs that use it
};
std::mutex pool_mutex;
std::map<c10::DeviceIndex, SharedPool>& shared_pools() {
  static std::map<c10::DeviceIndex, SharedPool> pools;
  return pools;
}

PoolId shared_pool(c10::DeviceIndex device) {
  const std::lock_guard<std::mutex> lock(pool_mutex);
  auto& pool = shared_pools()[device];
  if (!pool.valid) {
    pool.id = at::cuda::graph_pool_handle();
    pool.valid = true;
  }
  return pool.id;
}

/// A capture on `device` ended: `holds` when its graph keeps a use of the pool (released when
/// the graph is deleted); otherwise the use was released already, and a pool no graph uses any
/// more is forgotten.
void capture_ended(c10::DeviceIndex device, bool holds) {
  const std::lock_guard<std::mutex> lock(pool_mutex);
  auto& pool = shared_pools()[device];
  if (holds) ++pool.captured;
  else if (pool.captured == 0) pool = SharedPool{};
}

/// A graph of `device` that held a use of the pool was deleted (its destructor released it).
void captured_graph_deleted(c10::DeviceIndex device) {
  const std::lock_guard<std::mutex> lock(pool_mutex);
  auto& pool = shared_pools()[device];
  if (--pool.captured <= 0) pool = SharedPool{};
}
}  // namespace

extern "C" {

const char* nnvmc_cuda_graph_torch_version(void) { return TORCH_VERSION; }

void* nnvmc_cuda_graph_new(int device, char* error, size_t size) {
  try {
    const c10::DeviceIndex index = device >= 0 ? static_cast<c10::DeviceIndex>(device) : c10::cuda::current_device();
    c10::cuda::CUDAGuard guard(index);
    return new Graph{index, c10::cuda::getStreamFromPool(/*isHighPriority=*/false, index), {}};
  } catch (const std::exception& e) {
    fail(error, size, e.what());
  } catch (...) {
    fail(error, size, "unknown exception");
  }
  return nullptr;
}

void nnvmc_cuda_graph_delete(void* graph) {
  try {
    auto* g = static_cast<Graph*>(graph);
    if (g == nullptr) return;
    const auto device = g->device;
    const bool holds = g->holds_pool;
    delete g;
    if (holds) captured_graph_deleted(device);
  } catch (...) {
  }
}

long long nnvmc_cuda_graph_pool_bytes(int device) {
  try {
    const c10::DeviceIndex index = device >= 0 ? static_cast<c10::DeviceIndex>(device) : c10::cuda::current_device();
    PoolId id{0, 0};
    {
      const std::lock_guard<std::mutex> lock(pool_mutex);
      const auto& pool = shared_pools()[index];
      if (!pool.valid || pool.captured == 0) return 0;
      id = pool.id;
    }
    // The pool's segments, as the allocator lists them (no traces).
    const auto snapshot = c10::cuda::CUDACachingAllocator::snapshot(PoolId{0, 0}, /*include_traces=*/false);
    long long bytes = 0;
    for (const auto& segment : snapshot.segments)
      if (segment.device == index && segment.owner_private_pool_id == id) bytes += static_cast<long long>(segment.total_size);
    return bytes;
  } catch (...) {
    return 0;
  }
}

int nnvmc_cuda_graph_warmup(void* graph, int (*body)(void*), void* context, char* error, size_t size) {
  auto* g = static_cast<Graph*>(graph);
  if (g == nullptr) return fail(error, size, "no graph");
  try {
    c10::cuda::CUDAGuard device_guard(g->device);
    c10::cuda::getCurrentCUDAStream(g->device).synchronize();  // inputs written on the current stream
    int rc = 0;
    {
      c10::cuda::CUDAStreamGuard stream_guard(g->side);
      rc = body(context);
    }
    g->side.synchronize();  // results read on the current stream
    return rc != 0 ? 1 : 0;
  } catch (const std::exception& e) {
    return fail(error, size, e.what());
  }
}

int nnvmc_cuda_graph_capture(void* graph, int (*body)(void*), void* context, char* error, size_t size) {
  auto* g = static_cast<Graph*>(graph);
  if (g == nullptr) return fail(error, size, "no graph");
  std::optional<PoolId> pool;  // set once the allocator routes to it
  try {
    c10::cuda::CUDAGuard device_guard(g->device);
    c10::cuda::getCurrentCUDAStream(g->device).synchronize();
    c10::cuda::CUDAStreamGuard stream_guard(g->side);
    g->graph.capture_begin(shared_pool(g->device));
    pool = g->graph.pool();
    int rc = 0;
    try {
      rc = body(context);
    } catch (...) {
      rc = 1;
    }
    bool ended = false;
    try {
      g->graph.capture_end();
      ended = true;
    } catch (const std::exception& e) {
      if (rc == 0) fail(error, size, e.what());
    }
    if (ended) {
      g->side.synchronize();
      g->holds_pool = true;  // until the graph is deleted (its destructor releases the pool)
      capture_ended(g->device, true);
      if (rc == 0) return 0;
      return fail(error, size, "the captured body failed");
    }
  } catch (const std::exception& e) {
    fail(error, size, e.what());
  }
  // The capture did not end cleanly: end it on the stream if CUDA still captures, and give the
  // allocator its pool back (capture_end throws before it does so).
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(g->side.stream(), &status) == cudaSuccess && status != cudaStreamCaptureStatusNone) {
    cudaGraph_t partial = nullptr;
    cudaStreamEndCapture(g->side.stream(), &partial);
    if (partial != nullptr) cudaGraphDestroy(partial);
  }
  if (pool) {
    try {
      c10::cuda::CUDACachingAllocator::endAllocateToPool(g->device, *pool);
    } catch (...) {  // already ended
    }
    try {
      c10::cuda::CUDACachingAllocator::releasePool(g->device, *pool);
    } catch (...) {
    }
    capture_ended(g->device, false);
  }
  cudaGetLastError();
  if (error != nullptr && size > 0 && error[0] == '\0') std::snprintf(error, size, "the captured body failed");
  return 1;
}

int nnvmc_cuda_graph_replay(void* graph, char* error, size_t size) {
  auto* g = static_cast<Graph*>(graph);
  if (g == nullptr) return fail(error, size, "no graph");
  try {
    c10::cuda::CUDAGuard device_guard(g->device);
    g->graph.replay();
    return 0;
  } catch (const std::exception& e) {
    return fail(error, size, e.what());
  }
}

}  // extern "C"
