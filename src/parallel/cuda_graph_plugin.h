/* @file cuda_graph_plugin.h
 * C interface of libnnvmc_cuda_graph.so (cuda_graph_plugin.cpp): CUDA graph capture and replay
 * through libtorch's at::cuda::CUDAGraph. The plugin links libtorch_cuda, so only a process
 * that runs on CUDA opens it (parallel/device_graph.cpp). Errors come back as a non-zero
 * return and a message; nothing throws across this interface. */
#pragma once
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A new, empty graph, or null with `error` (size bytes) filled (e.g. no CUDA device). */
void* nnvmc_cuda_graph_new(char* error, size_t size);
/** Frees a graph (and its memory pool). */
void nnvmc_cuda_graph_delete(void* graph);
/** Captures body(context) on a side stream of CUDA device `device` (-1: the current device)
 *  after the current stream's work has finished; the body returns non-zero on failure.
 *  @return 0, or non-zero with `error` (size bytes) filled; the graph is then unusable. */
int nnvmc_cuda_graph_capture(void* graph, int device, int (*body)(void*), void* context, char* error,
                             size_t size);
/** Replays a captured graph on the current stream. @return 0, or non-zero with `error` filled. */
int nnvmc_cuda_graph_replay(void* graph, char* error, size_t size);

#ifdef __cplusplus
}
#endif
