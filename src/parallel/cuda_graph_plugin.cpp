/// libnnvmc_cuda_graph.so: the C interface of cuda_graph_plugin.h over at::cuda::CUDAGraph.
/// Built only with NNVMC_WITH_CUDA; opened at run time by parallel/device_graph.cpp.
#include "parallel/cuda_graph_plugin.h"

#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include <cstdio>
#include <exception>

namespace {
struct Graph {
  at::cuda::CUDAGraph graph;
};

int fail(char* error, size_t size, const char* what) {
  if (error != nullptr && size > 0) std::snprintf(error, size, "%s", what);
  cudaGetLastError();  // an invalidated capture leaves its error behind: clear it
  return 1;
}
}  // namespace

extern "C" {

void* nnvmc_cuda_graph_new(char* error, size_t size) {
  try {
    return new Graph();
  } catch (const std::exception& e) {
    fail(error, size, e.what());
  } catch (...) {
    fail(error, size, "unknown exception");
  }
  return nullptr;
}

void nnvmc_cuda_graph_delete(void* graph) {
  try {
    delete static_cast<Graph*>(graph);
  } catch (...) {
  }
}

int nnvmc_cuda_graph_capture(void* graph, int device, int (*body)(void*), void* context, char* error, size_t size) {
  auto* g = static_cast<Graph*>(graph);
  if (g == nullptr) return fail(error, size, "no graph");
  try {
    const c10::DeviceIndex index = device >= 0 ? static_cast<c10::DeviceIndex>(device) : c10::cuda::current_device();
    c10::cuda::CUDAGuard device_guard(index);
    c10::cuda::getCurrentCUDAStream(index).synchronize();  // the capture starts after queued work
    auto side = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, index);
    c10::cuda::CUDAStreamGuard stream_guard(side);  // graphs are captured on a non-default stream
    g->graph.capture_begin();
    int rc = 0;
    try {
      rc = body(context);
    } catch (...) {
      rc = 1;
    }
    if (rc != 0) {
      try {
        g->graph.capture_end();
      } catch (...) {
      }
      return fail(error, size, "the captured body failed");
    }
    g->graph.capture_end();
    side.synchronize();
    return 0;
  } catch (const std::exception& e) {
    return fail(error, size, e.what());
  }
}

int nnvmc_cuda_graph_replay(void* graph, char* error, size_t size) {
  auto* g = static_cast<Graph*>(graph);
  if (g == nullptr) return fail(error, size, "no graph");
  try {
    g->graph.replay();
    return 0;
  } catch (const std::exception& e) {
    return fail(error, size, e.what());
  }
}

}  // extern "C"
