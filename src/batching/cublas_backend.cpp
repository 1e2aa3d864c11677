/// DeviceOps on CUDA: cudaMalloc / cudaMallocHost buffers, cudaMemcpyAsync on three streams,
/// cudaEvent dependencies, cublas{D,S}gemmStridedBatched. The staged backend
/// (staged_gemm.cpp) drives them. Built only with NNVMC_WITH_CUDA.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <limits>
#include <string>
#include <vector>

#include "batching/backend.hpp"
#include "batching/device_ops.hpp"
#include "batching/strided_copy.hpp"
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

/// Makes `device` current for its scope and restores the caller's device (work may be
/// enqueued from threads whose current device differs).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    cudaGetDevice(&previous_);
    if (previous_ != device) check(cudaSetDevice(device), "cudaSetDevice");
    else previous_ = -1;
  }
  ~DeviceGuard() {
    if (previous_ >= 0) cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

class CudaDeviceOps final : public DeviceOps {
 public:
  explicit CudaDeviceOps(int device) : device_(device) {
    const DeviceGuard guard(device);
    for (auto& s : streams_) check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cublasCreate(&handle_), "cublasCreate");
    check(cublasSetStream(handle_, stream(Stream::compute)), "cublasSetStream");
  }
  ~CudaDeviceOps() override {
    const DeviceGuard guard(device_);
    for (auto& s : streams_) cudaStreamSynchronize(s);
    for (auto e : events_) cudaEventDestroy(e);
    cublasDestroy(handle_);
    for (auto& s : streams_) cudaStreamDestroy(s);
  }

  void* device_alloc(std::size_t bytes) override {
    const DeviceGuard guard(device_);
    void* p = nullptr;
    const cudaError_t e = cudaMalloc(&p, bytes);
    if (e != cudaSuccess) cudaGetLastError();  // a caller that recovers must not meet it again at a later launch
    check(e, "cudaMalloc");
    return p;
  }
  void device_free(void* p) override {
    const DeviceGuard guard(device_);
    cudaFree(p);
  }
  void* host_alloc(std::size_t bytes) override {
    const DeviceGuard guard(device_);
    void* p = nullptr;
    const cudaError_t e = cudaMallocHost(&p, bytes);
    if (e != cudaSuccess) cudaGetLastError();
    check(e, "cudaMallocHost");
    return p;
  }
  void host_free(void* p) override { cudaFreeHost(p); }

  void copy_to_device(void* dst, const void* src, std::size_t bytes, Stream s) override {
    const DeviceGuard guard(device_);
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream(s)), "copy to device");
  }
  void copy_to_host(void* dst, const void* src, std::size_t bytes, Stream s) override {
    const DeviceGuard guard(device_);
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream(s)), "copy to host");
  }

  void gemm(const GemmCall& g, Stream s) override {
    const DeviceGuard guard(device_);
    const ColumnMajorGemm c = column_major(g);
    const auto fits = [](std::int64_t x) { return x <= std::numeric_limits<int>::max(); };
    if (!fits(g.batch) || !fits(c.m) || !fits(c.n) || !fits(c.k) || !fits(c.ld_first) || !fits(c.ld_second))
      throw Error("cuBLAS GEMM: a dimension exceeds the 32-bit range (" + std::to_string(g.batch) + " x " +
                  std::to_string(g.m) + " x " + std::to_string(g.n) + " x " + std::to_string(g.k) + ")");
    const auto op = [](bool t) { return t ? CUBLAS_OP_T : CUBLAS_OP_N; };
    const int m = int(c.m), n = int(c.n), k = int(c.k), batch = int(g.batch);
    const int ld1 = std::max(1, int(c.ld_first)), ld2 = std::max(1, int(c.ld_second)), ldc = std::max(1, int(c.ldc));
    check(cublasSetStream(handle_, stream(s)), "cublasSetStream");
    const auto run = [&](auto gemm_fn, auto zero) {
      using T = decltype(zero);
      const T one = 1, beta = g.accumulate ? 1 : 0;
      check(gemm_fn(handle_, op(c.trans_first), op(c.trans_second), m, n, k, &one,
                    static_cast<const T*>(c.first), ld1, c.stride_first, static_cast<const T*>(c.second), ld2,
                    c.stride_second, &beta, static_cast<T*>(g.c), ldc, c.stride_c, batch),
            g.f64 ? "DgemmStridedBatched" : "SgemmStridedBatched");
    };
    if (g.f64) run(cublasDgemmStridedBatched, 0.0);
    else run(cublasSgemmStridedBatched, 0.0f);
  }

  void strided_copy(const StridedCopy& call, Stream s) override {
    const DeviceGuard guard(device_);
    launch_strided_copy(call, stream(s));
  }

  Event record(Stream s) override {
    const DeviceGuard guard(device_);
    Event id;
    if (!free_events_.empty()) {  // recycled (recycle_events: their earlier uses completed)
      id = free_events_.back();
      free_events_.pop_back();
    } else {
      cudaEvent_t e = nullptr;
      check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
      events_.push_back(e);
      id = Event(events_.size() - 1);
    }
    check(cudaEventRecord(events_[std::size_t(id)], stream(s)), "cudaEventRecord");
    return id;
  }
  void recycle_events() override {
    free_events_.clear();
    for (std::size_t i = 0; i < events_.size(); ++i) free_events_.push_back(Event(i));
  }
  void wait(Stream s, Event e) override {
    const DeviceGuard guard(device_);
    check(cudaStreamWaitEvent(stream(s), events_.at(std::size_t(e)), 0), "cudaStreamWaitEvent");
  }
  void synchronize(Event e) override {
    check(cudaEventSynchronize(events_.at(std::size_t(e))), "cudaEventSynchronize");
  }
  void synchronize_all() override {
    const DeviceGuard guard(device_);
    for (auto& s : streams_) check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  }
  std::size_t free_device_bytes() override {
    const DeviceGuard guard(device_);
    std::size_t free_b = 0, total = 0;
    check(cudaMemGetInfo(&free_b, &total), "cudaMemGetInfo");
    return free_b;
  }

 private:
  cudaStream_t stream(Stream s) const { return streams_[static_cast<int>(s)]; }

  int device_;
  std::array<cudaStream_t, 3> streams_{};
  cublasHandle_t handle_ = nullptr;
  std::vector<cudaEvent_t> events_;  ///< every event made (handles are indices)
  std::vector<Event> free_events_;    ///< recycled handles
};

}  // namespace

std::unique_ptr<GemmBackend> make_cublas_backend(int device_index, StagedGemmOptions options) {
  return make_staged_backend(std::make_unique<CudaDeviceOps>(device_index), options);
}

}  // namespace nnvmc::batching
