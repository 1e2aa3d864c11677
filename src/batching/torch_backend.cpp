/// The libtorch GEMM backend and backend selection.
#include <ATen/ATen.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <dlfcn.h>

#include <atomic>

#include <filesystem>
#include <mutex>

#include "batching/backend.hpp"
#include "batching/cuda_runtime.hpp"
#include "batching/torch_lib_dir.hpp"
#include "core/errors.hpp"

namespace nnvmc::batching {

namespace {
class TorchBackend final : public GemmBackend {
 public:
  bool takes_strided() const override { return true; }
  void bmm(const at::Tensor& a, const at::Tensor& b, const at::Tensor& c, bool accumulate) override {
    if (accumulate) {
      at::Tensor cc = c;
      cc.baddbmm_(a, b);
    } else {
      at::Tensor cc = c;
      at::bmm_out(cc, a, b);
    }
  }
};
}  // namespace

std::string loaded_torch_lib_dir() {
  // The folder of the libtorch_cpu this process actually loaded (the wheel it runs against, wherever
  // it lives now), not the build machine's path; that path is the fallback.
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&at::globalContext), &info) != 0 && info.dli_fname)
    return std::filesystem::path(info.dli_fname).parent_path().string();
  return NNVMC_TORCH_LIB_DIR;
}

void ensure_device_runtime(const std::string& device) {
  if (device.rfind("cuda", 0) != 0) return;
  static std::once_flag once;
  static std::string error;
  std::call_once(once, [] {
    const std::string path = loaded_torch_lib_dir() + "/libtorch_cuda.so";
    if (!dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL)) error = dlerror();
  });
  if (!error.empty()) throw InputError("device '" + device + "': cannot load libtorch_cuda.so (" + error + ")");
}

void require_device(const std::string& device) {
  ensure_device_runtime(device);
  if (device.rfind("cuda", 0) != 0) return;
  // CUDAGuardImpl::deviceCount() is 0 (not an exception) without a GPU or with a too-old driver
  const int count = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->deviceCount();
  const c10::Device d(device);
  if (count == 0) throw InputError("device '" + device + "' requested but no CUDA device is available");
  if (d.has_index() && d.index() >= count)
    throw InputError("device '" + device + "' requested but this machine has " + std::to_string(count) +
                     " CUDA device(s)");
}

c10::Device with_index(const c10::Device& device) {
  if (!device.is_cuda() || device.has_index()) return device;
  return c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->getDevice();
}

namespace {
std::atomic<std::int64_t> g_device_waits{0};
}  // namespace

std::int64_t device_waits() { return g_device_waits.load(); }

void synchronize_device(const c10::Device& device) {
  if (!device.is_cuda()) return;
  ++g_device_waits;
  c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->synchronizeDevice(with_index(device).index());
}

bool is_on(const at::Tensor& t, const c10::Device& device) {
  return t.device().type() == device.type() && (!device.has_index() || t.device().index() == device.index());
}

std::unique_ptr<GemmBackend> make_torch_backend() { return std::make_unique<TorchBackend>(); }

std::unique_ptr<GemmBackend> make_backend(BackendKind kind, const std::string& device, StagedGemmOptions staged) {
  if (kind == BackendKind::torch) {
    ensure_device_runtime(device);
    return make_torch_backend();
  }
  if (device != "cpu")
    throw InputError("backend 'cublas' stages host tensors itself: use it with device 'cpu' "
                     "(the host side), got device '" + device + "'");
  if (built_with_cuda() && cuda_device_count() == 0)  // a user error like any other device name, not a CUDA failure
    throw InputError("backend 'cublas' runs its GEMMs on a CUDA GPU, and this machine has none "
                     "(use --backend torch on the CPU)");
  return make_cublas_backend(staged.gpu, staged);
}

}  // namespace nnvmc::batching
