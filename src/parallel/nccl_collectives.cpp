/// @file nccl_collectives.cpp
/// DeviceCollectives through NCCL (built with NNVMC_WITH_NCCL). libnccl.so.2 is opened at run
/// time: on a CUDA run libtorch_cuda has already loaded the wheel's copy, which dlopen then
/// returns; the functions are looked up once. Communicators live until the process ends (no
/// destruction at exit, where the CUDA runtime may already be gone).
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "core/errors.hpp"
#include "parallel/device_collectives.hpp"

namespace nnvmc::parallel {
namespace {

/// The NCCL entry points nnvmc uses, resolved from the loaded libnccl.so.2.
struct NcclApi {
  decltype(&ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&ncclCommInitRank) comm_init_rank = nullptr;
  decltype(&ncclAllReduce) all_reduce = nullptr;
  decltype(&ncclBroadcast) broadcast = nullptr;
  decltype(&ncclGroupStart) group_start = nullptr;
  decltype(&ncclGroupEnd) group_end = nullptr;
  decltype(&ncclGetErrorString) error_string = nullptr;
  decltype(&ncclGetVersion) get_version = nullptr;
};

const NcclApi& nccl() {
  static std::once_flag once;
  static NcclApi api;
  static std::string error;
  std::call_once(once, [] {
    void* lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_GLOBAL);
    if (lib == nullptr) {
      error = dlerror();
      return;
    }
    auto sym = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      if (fn == nullptr && error.empty()) error = std::string("missing symbol ") + name;
    };
    sym(api.get_unique_id, "ncclGetUniqueId");
    sym(api.comm_init_rank, "ncclCommInitRank");
    sym(api.all_reduce, "ncclAllReduce");
    sym(api.broadcast, "ncclBroadcast");
    sym(api.group_start, "ncclGroupStart");
    sym(api.group_end, "ncclGroupEnd");
    sym(api.error_string, "ncclGetErrorString");
    sym(api.get_version, "ncclGetVersion");
  });
  if (!error.empty()) throw Error("device collectives (NCCL): cannot load libnccl.so.2 (" + error + ")");
  return api;
}

void check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw Error(std::string("device collectives (NCCL): ") + what + ": " + nccl().error_string(r));
}
void check(cudaError_t r, const char* what) {
  if (r != cudaSuccess)
    throw Error(std::string("device collectives (NCCL): CUDA ") + what + ": " + cudaGetErrorString(r));
}

class NcclCollectives final : public DeviceCollectives {
 public:
  NcclCollectives(Communicator& host, int device) : device_(device) {
    const auto& api = nccl();
    check(cudaSetDevice(device), "cudaSetDevice");
    ncclUniqueId id{};
    if (host.is_root()) check(api.get_unique_id(&id), "ncclGetUniqueId");
    host.broadcast(&id, sizeof id, 0);
    check(api.comm_init_rank(&comm_, host.size(), id, host.rank()), "ncclCommInitRank");
    rank_ = host.rank();
    size_ = host.size();
    int version = 0;
    api.get_version(&version);
    version_ = std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." +
               std::to_string(version % 100);
  }

  void allreduce_sum(void* data, std::size_t n, DeviceDtype dtype) override {
    const auto type = dtype == DeviceDtype::float64 ? ncclFloat64 : ncclFloat32;
    check(nccl().all_reduce(data, data, n, type, ncclSum, comm_, stream()), "ncclAllReduce");
    finish();
  }

  void broadcast(void* data, std::size_t bytes, int root) override {
    check(nccl().broadcast(data, data, bytes, ncclUint8, root, comm_, stream()), "ncclBroadcast");
    finish();
  }

  void allgatherv(const void* send, void* recv, const std::vector<std::int64_t>& bytes) override {
    if (static_cast<int>(bytes.size()) != size_) throw Error("device allgatherv: one count per rank needed");
    // One broadcast per rank inside a group: NCCL's allgather needs equal counts.
    const auto& api = nccl();
    check(api.group_start(), "ncclGroupStart");
    std::int64_t at = 0;
    for (int r = 0; r < size_; ++r) {
      auto* dst = static_cast<char*>(recv) + at;
      const void* src = r == rank_ ? send : dst;
      check(api.broadcast(src, dst, static_cast<std::size_t>(bytes[r]), ncclUint8, r, comm_, stream()),
            "ncclBroadcast");
      at += bytes[r];
    }
    check(api.group_end(), "ncclGroupEnd");
    finish();
  }

  std::string describe() const override {
    return "NCCL " + version_ + " on cuda:" + std::to_string(device_) + " (" + std::to_string(size_) + " ranks)";
  }

 private:
  /// torch's default stream on this device (the legacy default stream).
  static cudaStream_t stream() { return nullptr; }
  void finish() const {
    check(cudaSetDevice(device_), "cudaSetDevice");
    check(cudaStreamSynchronize(stream()), "cudaStreamSynchronize");
  }
  ncclComm_t comm_ = nullptr;
  int device_ = 0, rank_ = 0, size_ = 1;
  std::string version_;
};

}  // namespace

bool device_collectives_built() { return true; }

DeviceCollectives& device_collectives(Communicator& comm, int device) {
  // Kept for the process (intentionally never destroyed, see the file comment).
  static std::mutex mutex;
  static auto* made = new std::map<std::pair<const Communicator*, int>, std::unique_ptr<DeviceCollectives>>();
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = (*made)[{&comm, device}];
  if (!slot) slot = std::make_unique<NcclCollectives>(comm, device);
  return *slot;
}

}  // namespace nnvmc::parallel
