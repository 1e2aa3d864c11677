/* @file cuda_graph_plugin.h
 * C interface of libnnvmc_cuda_graph.so (cuda_graph_plugin.cpp): CUDA graph capture and replay
 * through libtorch's at::cuda::CUDAGraph. The plugin links libtorch_cuda, so only a process
 * that runs on CUDA opens it (parallel/device_graph.cpp). Errors come back as a non-zero
 * return and a message; nothing throws across this interface. A body returns non-zero when it
 * failed (its caller keeps the exception). */
#pragma once
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The torch version the plugin was built against (TORCH_VERSION): a plugin of another
 *  build must not be used (at::cuda::CUDAGraph's layout differs between versions). */
const char* nnvmc_cuda_graph_torch_version(void);
/** A new, empty graph on CUDA device `device` (-1: the current one) with its own side stream,
 *  or null with `error` (size bytes) filled (e.g. no CUDA device). */
void* nnvmc_cuda_graph_new(int device, char* error, size_t size);
/** Frees a graph. */
void nnvmc_cuda_graph_delete(void* graph);
/** Runs body(context) eagerly on the graph's side stream, between two synchronisations (so
 *  lazily created per-stream state, e.g. cuBLAS workspaces, exists before the capture).
 *  @return 0; 1 when the body failed; 2 with `error` filled when CUDA failed. */
int nnvmc_cuda_graph_warmup(void* graph, int (*body)(void*), void* context, char* error, size_t size);
/** Captures body(context) on the graph's side stream into the process's shared graph memory
 *  pool (the bodies' temporaries are dead when a replay ends, and replays are serial). On
 *  failure the capture is ended and the pool released, so the allocator is as before.
 *  @return 0, or non-zero with `error` filled; the graph is then unusable. */
int nnvmc_cuda_graph_capture(void* graph, int (*body)(void*), void* context, char* error, size_t size);
/** Replays a captured graph on the current stream. @return 0, or non-zero with `error` filled. */
int nnvmc_cuda_graph_replay(void* graph, char* error, size_t size);
/** Bytes the shared graph pool of CUDA device `device` holds: the caching allocator's segments
 *  owned by the pool (0 when no captured graph uses it: the allocator then frees it, and the
 *  next capture takes a fresh pool). */
long long nnvmc_cuda_graph_pool_bytes(int device);

#ifdef __cplusplus
}
#endif
