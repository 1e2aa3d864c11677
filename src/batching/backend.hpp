#pragma once
/// @file backend.hpp
/// GEMM backends used by the executor (internal).
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>

#include "batching/plan.hpp"

namespace nnvmc::batching {

class DeviceOps;

/// Batched GEMM c[β] (=|+=) a[β]·b[β] with a [B, M, K], b [B, K, N], c [B, M, N]
/// (strided views whose last two dims are row- or column-major).
class GemmBackend {
 public:
  virtual ~GemmBackend() = default;
  /// c = a·b (accumulate=false) or c += a·b (accumulate=true); c is contiguous unless
  /// takes_strided(). A backend may finish asynchronously: c holds the result only after
  /// synchronize() and the host must not touch c before then; a and b, however, may be reused
  /// by the host as soon as bmm returns (the executor hands their buffers to the next batch), so
  /// a backend reads them during the call (the staged backend packs them into pinned memory) or
  /// in its device's stream order (libtorch on CUDA). `stable_a`/`stable_b` promise that the operand's memory
  /// stays alive and unchanged until the backend is destroyed (slices of the contraction's
  /// operands), so a backend may keep a device copy of it for later calls.
  virtual void bmm(const at::Tensor& a, const at::Tensor& b, const at::Tensor& c, bool accumulate,
                   bool stable_a, bool stable_b) {
    bmm(a, b, c, accumulate);
  }
  virtual void bmm(const at::Tensor& a, const at::Tensor& b, const at::Tensor& c, bool accumulate) = 0;
  /// Whether bmm takes operand matrices with a leading dimension above their width and a c
  /// that is a column block of a larger row-major matrix (plans with strided slices or tiles).
  virtual bool takes_strided() const { return false; }
  /// Completes every outstanding bmm (results written to their host tensors). Kept
  /// intermediates (keep()) do not survive it: the executor synchronizes only once a batch's
  /// intermediates are consumed.
  virtual void synchronize() {}

  /// Whether the backend keeps a multi-step plan's intermediates on its device (keep,
  /// copy_kept, fetch_kept, release): they then never cross to the host, and the host neither
  /// waits for nor reads them. The staged backend does; libtorch's needs not (its tensors are
  /// already on their device).
  virtual bool keeps_intermediates() const { return false; }
  /// Declares that `c` (contiguous, [B, M, N]) is an intermediate: the bmm that writes it next
  /// writes a device buffer and leaves c's host memory untouched until release(c).
  virtual void keep(const at::Tensor& c) {}
  /// dst (contiguous) = src, a strided view into a kept tensor, copied on the device; dst is
  /// then kept too. False when src is not kept (the caller copies on the host).
  virtual bool copy_kept(const at::Tensor& src, const at::Tensor& dst) { return false; }
  /// Writes kept `t` into its host memory now (the host is about to read it); it is no longer kept.
  virtual void fetch_kept(const at::Tensor& t) {}
  /// Forgets the device copy of `t` if it is kept (the executor is done with it).
  virtual void release(const at::Tensor& t) {}
  /// Bytes this backend copied host → device / device → host so far.
  virtual std::int64_t bytes_h2d() const { return 0; }
  virtual std::int64_t bytes_d2h() const { return 0; }
  /// Device memory a staging backend may hold (0: no limit, or none held).
  virtual std::int64_t device_budget_bytes() const { return 0; }
  /// The most device memory a staging backend held at once so far: staging buffers, kept
  /// intermediates and resident operands (0 for backends that hold none of their own).
  virtual std::int64_t peak_device_bytes() const { return 0; }
};

/// libtorch bmm on the tensors' own device.
std::unique_ptr<GemmBackend> make_torch_backend();

/// Options of the staged (host operands, device GEMMs) backend.
struct StagedGemmOptions {
  /// Device bytes for operands kept resident across calls (recurring operand blocks are
  /// uploaded once); < 0: half of the free device memory when the backend is made, or of the
  /// device budget below when that is less; 0: none.
  std::int64_t resident_bytes = -1;
  /// Device memory the backend may hold: staging buffers, kept intermediates and resident
  /// operands together. Resident operands are evicted (least recently read first) to make room
  /// for staging; a call whose staging alone does not fit throws BudgetError. 0: no limit;
  /// < 0: MemoryBudget::kAutoFraction of the device's free memory when the backend is made.
  std::int64_t device_budget_bytes = 0;
  int gpu = 0;  ///< CUDA device index the GEMMs run on (MPI ranks: parallel::rank_gpu)
};

/// GEMMs of host tensors on a device reached through `ops`: operands are packed into pinned
/// buffers and uploaded asynchronously, copies overlap the GEMMs of neighbouring calls (two
/// staging slots, separate copy-in / compute / copy-out streams), recurring stable operands stay
/// resident, and an output accumulated by consecutive calls stays on the device until the next
/// output block starts (staged_gemm.cpp).
std::unique_ptr<GemmBackend> make_staged_backend(std::unique_ptr<DeviceOps> ops, StagedGemmOptions options = {});

/// The staged backend on CUDA device `device_index`: cuBLAS dgemm/sgemm (strided batched) on
/// raw device buffers, CUDA streams and events, cudaMallocHost buffers.
/// @throws InputError when built without NNVMC_WITH_CUDA.
std::unique_ptr<GemmBackend> make_cublas_backend(int device_index, StagedGemmOptions options = {});

/// Makes libtorch's CUDA runtime available for `device` "cuda[:N]" (the build links only
/// libtorch_cpu; libtorch_cuda.so of the same wheel is loaded on first use). No-op for "cpu".
/// @throws InputError when it cannot be loaded.
void ensure_device_runtime(const std::string& device);

/// ensure_device_runtime(), then checks that the CUDA device `device` names exists (a GPU, a
/// driver, the index below the device count), so a command fails with a user error up front
/// instead of a CUDA runtime error at its first tensor. No-op for "cpu".
/// @throws InputError naming `device` otherwise.
void require_device(const std::string& device);

/// Waits for the work queued on `device` when it is a CUDA device (no-op elsewhere); without an
/// index, the current CUDA device. (Timers use it so a stage's clock stops when its kernels are
/// done, not when they are launched.)
void synchronize_device(const c10::Device& device);

/// How many times synchronize_device() has waited for a CUDA device in this process (tests
/// count the waits a stretch of work makes).
std::int64_t device_waits();

/// `device` with its index: an index-less "cuda" is the current CUDA device (cuda:N); other
/// devices as they are.
c10::Device with_index(const c10::Device& device);

/// Whether `t` lives on `device`; a device without an index ("cuda") matches any of its type.
bool is_on(const at::Tensor& t, const c10::Device& device);

/// The backend of `kind` for `device` ("cpu", "cuda", "cuda:N"); `staged`: the cublas backend's options.
std::unique_ptr<GemmBackend> make_backend(BackendKind kind, const std::string& device, StagedGemmOptions staged = {});

}  // namespace nnvmc::batching
