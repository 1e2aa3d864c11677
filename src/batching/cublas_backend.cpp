/// DeviceOps on CUDA: cudaMalloc / cudaMallocHost buffers, cudaMemcpyAsync on three streams,
/// cudaEvent dependencies, cublas{D,S}gemmStridedBatched. The staged backend
/// (staged_gemm.cpp) drives them. Built only with NNVMC_WITH_CUDA.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <array>
#include <string>
#include <vector>

#include "batching/backend.hpp"
#include "batching/device_ops.hpp"
#include "core/errors.hpp"

namespace nnvmc::batching {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(std::string("CUDA ") + what + ": " + cudaGetErrorString(e));
}
void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw Error(std::string("cuBLAS ") + what + " failed (status " + std::to_string(int(s)) + ")");
}

class CudaDeviceOps final : public DeviceOps {
 public:
  explicit CudaDeviceOps(int device) : device_(device) {
    check(cudaSetDevice(device), "cudaSetDevice");
    for (auto& s : streams_) check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cublasCreate(&handle_), "cublasCreate");
    check(cublasSetStream(handle_, stream(Stream::compute)), "cublasSetStream");
  }
  ~CudaDeviceOps() override {
    cudaSetDevice(device_);
    for (auto& s : streams_) cudaStreamSynchronize(s);
    for (auto e : events_) cudaEventDestroy(e);
    cublasDestroy(handle_);
    for (auto& s : streams_) cudaStreamDestroy(s);
  }

  void* device_alloc(std::size_t bytes) override {
    void* p = nullptr;
    check(cudaMalloc(&p, bytes), "cudaMalloc");
    return p;
  }
  void device_free(void* p) override { cudaFree(p); }
  void* host_alloc(std::size_t bytes) override {
    void* p = nullptr;
    check(cudaMallocHost(&p, bytes), "cudaMallocHost");
    return p;
  }
  void host_free(void* p) override { cudaFreeHost(p); }

  void copy_to_device(void* dst, const void* src, std::size_t bytes, Stream s) override {
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream(s)), "copy to device");
  }
  void copy_to_host(void* dst, const void* src, std::size_t bytes, Stream s) override {
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream(s)), "copy to host");
  }

  void gemm(const GemmCall& g, Stream s) override {
    // Row-major C = op(A)·op(B) is column-major Cᵀ = op(B)ᵀ·op(A)ᵀ: a row-major [R, C] buffer
    // is a column-major C×R matrix with leading dimension C.
    const int lda = int(g.trans_a ? g.m : g.k), ldb = int(g.trans_b ? g.k : g.n);
    const auto opa = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, opb = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    check(cublasSetStream(handle_, stream(s)), "cublasSetStream");
    const long long sc = g.m * g.n;
    if (g.f64) {
      const double one = 1.0, beta = g.accumulate ? 1.0 : 0.0;
      check(cublasDgemmStridedBatched(handle_, opb, opa, int(g.n), int(g.m), int(g.k), &one,
                                      static_cast<const double*>(g.b), ldb, g.stride_b,
                                      static_cast<const double*>(g.a), lda, g.stride_a, &beta,
                                      static_cast<double*>(g.c), int(g.n), sc, int(g.batch)),
            "DgemmStridedBatched");
    } else {
      const float one = 1.0f, beta = g.accumulate ? 1.0f : 0.0f;
      check(cublasSgemmStridedBatched(handle_, opb, opa, int(g.n), int(g.m), int(g.k), &one,
                                      static_cast<const float*>(g.b), ldb, g.stride_b,
                                      static_cast<const float*>(g.a), lda, g.stride_a, &beta,
                                      static_cast<float*>(g.c), int(g.n), sc, int(g.batch)),
            "SgemmStridedBatched");
    }
  }

  Event record(Stream s) override {
    cudaEvent_t e = nullptr;
    check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
    check(cudaEventRecord(e, stream(s)), "cudaEventRecord");
    events_.push_back(e);  // events are not reused: a handle always means this point
    return Event(events_.size() - 1);
  }
  void wait(Stream s, Event e) override { check(cudaStreamWaitEvent(stream(s), events_.at(e), 0), "cudaStreamWaitEvent"); }
  void synchronize(Event e) override { check(cudaEventSynchronize(events_.at(e)), "cudaEventSynchronize"); }
  void synchronize_all() override {
    for (auto& s : streams_) check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  }
  std::size_t free_device_bytes() override {
    std::size_t free_b = 0, total = 0;
    check(cudaMemGetInfo(&free_b, &total), "cudaMemGetInfo");
    return free_b;
  }

 private:
  cudaStream_t stream(Stream s) const { return streams_[static_cast<int>(s)]; }

  int device_;
  std::array<cudaStream_t, 3> streams_{};
  cublasHandle_t handle_ = nullptr;
  std::vector<cudaEvent_t> events_;
};

}  // namespace

std::unique_ptr<GemmBackend> make_cublas_backend(int device_index) {
  return make_staged_backend(std::make_unique<CudaDeviceOps>(device_index));
}

}  // namespace nnvmc::batching
