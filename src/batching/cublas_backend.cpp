/// cuBLAS backend: batched GEMMs on raw device buffers. Host operands are packed into
/// pinned staging buffers, copied asynchronously on one stream, multiplied with
/// cublas{D,S}gemmStridedBatched and copied back. Built only with NNVMC_WITH_CUDA.
#include <ATen/ATen.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstring>

#include "batching/backend.hpp"
#include "core/errors.hpp"

namespace nnvmc::batching {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(std::string("CUDA ") + what + ": " + cudaGetErrorString(e));
}
void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw Error(std::string("cuBLAS ") + what + " failed (status " + std::to_string(int(s)) + ")");
}

/// A growable device buffer and its pinned host twin.
struct Buffer {
  void* dev = nullptr;
  void* host = nullptr;
  std::size_t bytes = 0;
  void reserve(std::size_t b) {
    if (b <= bytes) return;
    release();
    check(cudaMalloc(&dev, b), "cudaMalloc");
    check(cudaMallocHost(&host, b), "cudaMallocHost");
    bytes = b;
  }
  void release() {
    if (dev) cudaFree(dev);
    if (host) cudaFreeHost(host);
    dev = host = nullptr;
    bytes = 0;
  }
};

class CublasBackend final : public GemmBackend {
 public:
  explicit CublasBackend(int device) {
    check(cudaSetDevice(device), "cudaSetDevice");
    check(cudaStreamCreate(&stream_), "cudaStreamCreate");
    check(cublasCreate(&handle_), "cublasCreate");
    check(cublasSetStream(handle_, stream_), "cublasSetStream");
  }
  ~CublasBackend() override {
    for (auto* b : {&a_, &b_, &c_}) b->release();
    cublasDestroy(handle_);
    cudaStreamDestroy(stream_);
  }

  void bmm(const at::Tensor& a, const at::Tensor& b, const at::Tensor& c, bool accumulate) override {
    if (!a.device().is_cpu() || !c.is_contiguous())
      throw InputError("cublas backend: expects host tensors and a contiguous output");
    const std::int64_t B = a.size(0), M = a.size(1), K = a.size(2), N = b.size(2);
    // Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ; a row-major [R, C] buffer is a
    // column-major C×R matrix, a transposed view of one is its transpose.
    bool ta = false, tb = false;
    at::Tensor ha = host_layout(a, ta), hb = host_layout(b, tb);
    const std::size_t es = a.element_size();
    stage(a_, ha);
    stage(b_, hb);
    c_.reserve(std::size_t(c.nbytes()));
    if (accumulate) {
      std::memcpy(c_.host, c.data_ptr(), c.nbytes());
      copy_h2d(c_, c.nbytes());
    }
    const int lda = int(ta ? M : K), ldb = int(tb ? K : N);
    const auto opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (a.scalar_type() == at::kDouble) {
      const double one = 1.0, beta = accumulate ? 1.0 : 0.0;
      check(cublasDgemmStridedBatched(handle_, opb, opa, int(N), int(M), int(K), &one,
                                      static_cast<const double*>(b_.dev), ldb, K * N,
                                      static_cast<const double*>(a_.dev), lda, M * K, &beta,
                                      static_cast<double*>(c_.dev), int(N), M * N, int(B)),
            "DgemmStridedBatched");
    } else if (a.scalar_type() == at::kFloat) {
      const float one = 1.0f, beta = accumulate ? 1.0f : 0.0f;
      check(cublasSgemmStridedBatched(handle_, opb, opa, int(N), int(M), int(K), &one,
                                      static_cast<const float*>(b_.dev), ldb, K * N,
                                      static_cast<const float*>(a_.dev), lda, M * K, &beta,
                                      static_cast<float*>(c_.dev), int(N), M * N, int(B)),
            "SgemmStridedBatched");
    } else {
      throw InputError("cublas backend: only float64 and float32");
    }
    check(cudaMemcpyAsync(c_.host, c_.dev, c.nbytes(), cudaMemcpyDeviceToHost, stream_), "copy d2h");
    check(cudaStreamSynchronize(stream_), "synchronize");
    d2h_ += c.nbytes();
    std::memcpy(c.data_ptr(), c_.host, c.nbytes());
    (void)es;
  }
  std::int64_t bytes_h2d() const override { return h2d_; }
  std::int64_t bytes_d2h() const override { return d2h_; }

 private:
  /// A contiguous host buffer holding `x` [B, R, C] row-major (trans=false) or as the
  /// transpose of a row-major [B, C, R] (trans=true).
  static at::Tensor host_layout(const at::Tensor& x, bool& trans) {
    if (x.is_contiguous()) return trans = false, x;
    if (x.transpose(1, 2).is_contiguous()) return trans = true, x.transpose(1, 2);
    return trans = false, x.contiguous();
  }
  void stage(Buffer& buf, const at::Tensor& x) {
    buf.reserve(std::size_t(x.nbytes()));
    std::memcpy(buf.host, x.data_ptr(), x.nbytes());
    copy_h2d(buf, x.nbytes());
  }
  void copy_h2d(Buffer& buf, std::size_t bytes) {
    check(cudaMemcpyAsync(buf.dev, buf.host, bytes, cudaMemcpyHostToDevice, stream_), "copy h2d");
    h2d_ += std::int64_t(bytes);
  }

  cublasHandle_t handle_ = nullptr;
  cudaStream_t stream_ = nullptr;
  Buffer a_, b_, c_;
  std::int64_t h2d_ = 0, d2h_ = 0;
};

}  // namespace

std::unique_ptr<GemmBackend> make_cublas_backend(int device_index) {
  return std::make_unique<CublasBackend>(device_index);
}

}  // namespace nnvmc::batching
