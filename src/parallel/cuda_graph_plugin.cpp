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
};

int fail(char* error, size_t size, const char* what, int code = 2) {
  if (error != nullptr && size > 0) std::snprintf(error, size, "%s", what);
  cudaGetLastError();  // an invalidated capture leaves its error behind: clear it
  return code;
}

/// One graph memory pool per device, shared by every graph of the process.
PoolId shared_pool(c10::DeviceIndex device) {
  static std::mutex mutex;
  static std::map<c10::DeviceIndex, PoolId> pools;
  const std::lock_guard<std::mutex> lock(mutex);
  const auto it = pools.find(device);
  if (it != pools.end()) return it->second;
  return pools[device] = at::cuda::graph_pool_handle();
}

/// Per device: graphs that exist, and the reserved memory their captures added (the pool).
struct PoolUse {
  int graphs = 0;
  long long bytes = 0;
};
std::mutex pool_use_mutex;
std::map<c10::DeviceIndex, PoolUse>& pool_use() {
  static std::map<c10::DeviceIndex, PoolUse> use;
  return use;
}

/// Memory the caching allocator has reserved from the driver on `device`.
long long reserved_bytes(c10::DeviceIndex device) {
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device);
  return stats.reserved_bytes[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)].current;
}
}  // namespace

extern "C" {

const char* nnvmc_cuda_graph_torch_version(void) { return TORCH_VERSION; }

void* nnvmc_cuda_graph_new(int device, char* error, size_t size) {
  try {
    const c10::DeviceIndex index = device >= 0 ? static_cast<c10::DeviceIndex>(device) : c10::cuda::current_device();
    c10::cuda::CUDAGuard guard(index);
    auto* graph = new Graph{index, c10::cuda::getStreamFromPool(/*isHighPriority=*/false, index), {}};
    const std::lock_guard<std::mutex> lock(pool_use_mutex);
    ++pool_use()[index].graphs;
    return graph;
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
    delete g;
    const std::lock_guard<std::mutex> lock(pool_use_mutex);
    auto& use = pool_use()[device];
    if (--use.graphs <= 0) use = PoolUse{};
  } catch (...) {
  }
}

long long nnvmc_cuda_graph_pool_bytes(int device) {
  try {
    const c10::DeviceIndex index = device >= 0 ? static_cast<c10::DeviceIndex>(device) : c10::cuda::current_device();
    const std::lock_guard<std::mutex> lock(pool_use_mutex);
    return pool_use()[index].bytes;
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
    const long long reserved_before = reserved_bytes(g->device);
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
      if (rc == 0) {
        // The pool's new segments: during a capture every allocation on the device's capturing
        // stream comes from the pool, so the reserved memory grew by what the pool took.
        const long long grown = reserved_bytes(g->device) - reserved_before;
        const std::lock_guard<std::mutex> lock(pool_use_mutex);
        if (grown > 0) pool_use()[g->device].bytes += grown;
        return 0;
      }
      return fail(error, size, "the captured body failed");  // the graph's destructor releases the pool
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
