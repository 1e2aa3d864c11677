#pragma once
/// @file device_ops.hpp
/// The few device operations the staged GEMM backend needs (internal): device and pinned host
/// buffers, asynchronous copies and batched GEMMs on numbered streams, and events between
/// them. cublas_backend.cpp implements them with the CUDA runtime and cuBLAS; the tests
/// implement them on the host with lazily executed stream queues, so the pipeline's ordering
/// (what waits for what) is checked without a GPU. Torch-free.
#include <cstddef>
#include <cstdint>

namespace nnvmc::batching {

/// Streams of the staged pipeline.
enum class Stream : int {
  copy_in = 0,   ///< host → device copies
  compute = 1,   ///< GEMMs
  copy_out = 2,  ///< device → host copies
};

/// One strided-batched GEMM in row-major terms: for every β < batch,
/// C[β] (= | +=) op(A[β]) · op(B[β]) with op(A) [M, K], op(B) [K, N] and C [M, N] contiguous.
/// A[β] is stored row-major as [M, K] (trans_a = false) or [K, M] (trans_a = true), likewise B
/// as [K, N] or [N, K]; consecutive β are stride_a / stride_b / M·N elements apart.
struct GemmCall {
  bool f64 = true;  ///< float64 (else float32)
  bool trans_a = false, trans_b = false;
  std::int64_t batch = 1, m = 0, n = 0, k = 0;
  const void* a = nullptr;
  const void* b = nullptr;
  void* c = nullptr;
  std::int64_t stride_a = 0, stride_b = 0;
  bool accumulate = false;  ///< C += (else C =)
};

/// The same GEMM in the column-major terms of BLAS/cuBLAS: a row-major [R, C] buffer is a
/// column-major C×R matrix, so row-major C = op(A)·op(B) is column-major Cᵀ = op(B)ᵀ·op(A)ᵀ:
/// C' (m'×n', leading dimension ldc) = op(first) · op(second) with m' = n, n' = m.
struct ColumnMajorGemm {
  bool trans_first = false, trans_second = false;
  std::int64_t m = 0, n = 0, k = 0;
  const void* first = nullptr;
  std::int64_t ld_first = 0, stride_first = 0;
  const void* second = nullptr;
  std::int64_t ld_second = 0, stride_second = 0;
  std::int64_t ldc = 0, stride_c = 0;
};

/// The column-major arguments of `g` (what cublas{D,S}gemmStridedBatched receives).
inline ColumnMajorGemm column_major(const GemmCall& g) {
  ColumnMajorGemm c;
  c.trans_first = g.trans_b, c.trans_second = g.trans_a;
  c.m = g.n, c.n = g.m, c.k = g.k;
  c.first = g.b, c.ld_first = g.trans_b ? g.k : g.n, c.stride_first = g.stride_b;
  c.second = g.a, c.ld_second = g.trans_a ? g.m : g.k, c.stride_second = g.stride_a;
  c.ldc = g.n, c.stride_c = g.m * g.n;
  return c;
}

/// Most dimensions of one strided copy. A kept intermediate with more labels is copied on the
/// host (the planner models the same rule).
inline constexpr int kMaxCopyRank = 16;

/// A strided gather into a contiguous buffer on the device: for every index (i_0, …, i_{r-1})
/// of `sizes` in row-major order, dst[next] = src[Σ_d i_d · strides[d]] (strides in elements).
/// This is a permuted (layout) copy of a tensor that stays on the device.
struct StridedCopy {
  bool f64 = true;  ///< float64 (else float32)
  int rank = 0;
  std::int64_t sizes[kMaxCopyRank] = {};
  std::int64_t strides[kMaxCopyRank] = {};
  const void* src = nullptr;
  void* dst = nullptr;
};

/// Device operations; all copies and GEMMs are asynchronous on their stream.
class DeviceOps {
 public:
  using Event = int;
  virtual ~DeviceOps() = default;
  virtual void* device_alloc(std::size_t bytes) = 0;
  virtual void device_free(void* p) = 0;
  /// Page-locked host memory (the source/destination of asynchronous copies).
  virtual void* host_alloc(std::size_t bytes) = 0;
  virtual void host_free(void* p) = 0;
  virtual void copy_to_device(void* dst, const void* src, std::size_t bytes, Stream s) = 0;
  virtual void copy_to_host(void* dst, const void* src, std::size_t bytes, Stream s) = 0;
  virtual void gemm(const GemmCall& call, Stream s) = 0;
  /// A layout copy between two device buffers (see StridedCopy).
  virtual void strided_copy(const StridedCopy& call, Stream s) = 0;
  /// An event marking everything enqueued on `s` so far.
  virtual Event record(Stream s) = 0;
  /// Work enqueued on `s` after this call starts only after `e` completed.
  virtual void wait(Stream s, Event e) = 0;
  /// The host blocks until `e` completed.
  virtual void synchronize(Event e) = 0;
  /// The host blocks until every stream is idle.
  virtual void synchronize_all() = 0;
  /// Every event recorded so far has completed and its handle will not be used again: the
  /// implementation may reuse them (bounds the number of live events of a long contraction).
  virtual void recycle_events() {}
  /// Free device memory now (bytes).
  virtual std::size_t free_device_bytes() = 0;
};

}  // namespace nnvmc::batching
