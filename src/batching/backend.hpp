#pragma once
/// @file backend.hpp
/// GEMM backends used by the executor (internal).
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>

#include "batching/plan.hpp"

namespace nnvmc::batching {

/// Batched GEMM c[β] (=|+=) a[β]·b[β] with a [B, M, K], b [B, K, N], c [B, M, N]
/// (strided views whose last two dims are row- or column-major).
class GemmBackend {
 public:
  virtual ~GemmBackend() = default;
  /// c = a·b (accumulate=false) or c += a·b (accumulate=true); c is contiguous.
  virtual void bmm(const at::Tensor& a, const at::Tensor& b, const at::Tensor& c, bool accumulate) = 0;
  /// Bytes this backend copied host → device / device → host so far.
  virtual std::int64_t bytes_h2d() const { return 0; }
  virtual std::int64_t bytes_d2h() const { return 0; }
};

/// libtorch bmm on the tensors' own device.
std::unique_ptr<GemmBackend> make_torch_backend();

/// cuBLAS dgemm/sgemm (strided batched) on raw device buffers: host operands are staged
/// through pinned buffers with asynchronous copies on a stream.
/// @throws InputError when built without NNVMC_WITH_CUDA.
std::unique_ptr<GemmBackend> make_cublas_backend(int device_index);

/// Makes libtorch's CUDA runtime available for `device` "cuda[:N]" (the build links only
/// libtorch_cpu; libtorch_cuda.so of the same wheel is loaded on first use). No-op for "cpu".
/// @throws InputError when it cannot be loaded.
void ensure_device_runtime(const std::string& device);

/// The backend of `kind` for `device` ("cpu", "cuda", "cuda:N").
std::unique_ptr<GemmBackend> make_backend(BackendKind kind, const std::string& device);

}  // namespace nnvmc::batching
