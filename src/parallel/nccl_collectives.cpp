/// @file nccl_collectives.cpp
/// DeviceCollectives through NCCL (built with NNVMC_WITH_NCCL). libnccl.so.2 is opened at run
/// time, after libtorch_cuda (loaded first if need be) has loaded the wheel's copy, which dlopen
/// then returns; the functions are looked up once. Communicators live until the process ends (no
/// destruction at exit, where the CUDA runtime may already be gone).
///
/// Before NCCL is initialised, the ranks agree that every one of them can take part (NCCL
/// loads, the device can be selected, no two ranks share a GPU — NCCL refuses that): a rank
/// that could not would leave the others waiting in ncclCommInitRank for ever.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "batching/backend.hpp"
#include "core/errors.hpp"
#include "core/log.hpp"
#include "parallel/device_collectives.hpp"
#include "parallel/gpu_sharing.hpp"

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

constexpr const char* kWhat = "device collectives (NCCL): ";

const NcclApi& nccl() {
  static std::once_flag once;
  static NcclApi api;
  static std::string error;
  std::call_once(once, [] {
    // libtorch_cuda first: it needs the wheel's NCCL (a newer API than a system libnccl.so.2), and
    // a library of the same soname loaded before it would be reused and fail it (undefined
    // symbol ncclCommResume, seen when a CPU-only test opened NCCL before another loaded CUDA)
    try {
      batching::ensure_device_runtime("cuda");
    } catch (const Error&) {  // no CUDA runtime in this build or wheel: NCCL alone
    }
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
  if (!error.empty()) throw Error(std::string(kWhat) + "cannot load libnccl.so.2 (" + error + ")");
  return api;
}

void check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw Error(std::string(kWhat) + what + ": " + nccl().error_string(r));
}
void check(cudaError_t r, const char* what) {
  if (r != cudaSuccess) throw Error(std::string(kWhat) + "CUDA " + what + ": " + cudaGetErrorString(r));
}

/// Makes `device` current for the scope and restores the previous current device (torch
/// allocates on the current device when no index is given).
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    check(cudaGetDevice(&previous_), "cudaGetDevice");
    check(cudaSetDevice(device), "cudaSetDevice");
  }
  ~DeviceScope() { cudaSetDevice(previous_); }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = 0;
};

/// ncclGroupStart … ncclGroupEnd; the group is closed also when a call inside it throws.
class NcclGroup {
 public:
  NcclGroup() { check(nccl().group_start(), "ncclGroupStart"); }
  ~NcclGroup() {
    if (open_) nccl().group_end();
  }
  void end() {
    open_ = false;
    check(nccl().group_end(), "ncclGroupEnd");
  }
  NcclGroup(const NcclGroup&) = delete;
  NcclGroup& operator=(const NcclGroup&) = delete;

 private:
  bool open_ = true;
};

/// Why this rank cannot take part in NCCL collectives on `device` ("" when it can); then, with
/// every rank's (host, device) pair, whether two ranks share a GPU. Collective.
std::string why_not(Communicator& host, int device) {
  std::string why;
  try {
    nccl();
    DeviceScope scope(device);
  } catch (const Error& e) {
    why = e.what();
  }
  // the physical GPU, not the index: ranks that each see only their own GPU all call it device 0
  if (ranks_sharing_gpu(host, device) > 1 && why.empty())
    why = std::string(kWhat) + "two ranks share a GPU (NCCL needs one GPU per rank)";
  return why;
}

class NcclCollectives final : public DeviceCollectives {
 public:
  NcclCollectives(Communicator& host, int device) : device_(device), rank_(host.rank()), size_(host.size()) {
    const auto& api = nccl();
    DeviceScope scope(device);
    ncclUniqueId id{};
    if (host.is_root()) check(api.get_unique_id(&id), "ncclGetUniqueId");
    host.broadcast(&id, sizeof id, 0);
    check(api.comm_init_rank(&comm_, size_, id, rank_), "ncclCommInitRank");
    int version = 0;
    api.get_version(&version);
    version_ = std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." +
               std::to_string(version % 100);
  }

  void allreduce_sum(void* data, std::size_t n, DeviceDtype dtype) override {
    DeviceScope scope(device_);
    before();
    const auto type = dtype == DeviceDtype::float64 ? ncclFloat64 : ncclFloat32;
    check(nccl().all_reduce(data, data, n, type, ncclSum, comm_, stream()), "ncclAllReduce");
    after();
  }

  void broadcast(void* data, std::size_t bytes, int root) override {
    DeviceScope scope(device_);
    before();
    check(nccl().broadcast(data, data, bytes, ncclUint8, root, comm_, stream()), "ncclBroadcast");
    after();
  }

  void allgatherv(const void* send, void* recv, const std::vector<std::int64_t>& bytes) override {
    if (static_cast<int>(bytes.size()) != size_) throw Error(std::string(kWhat) + "allgatherv needs one count per rank");
    DeviceScope scope(device_);
    before();
    {  // one broadcast per rank inside a group: NCCL's allgather needs equal counts
      NcclGroup group;
      std::int64_t at = 0;
      for (int r = 0; r < size_; ++r) {
        auto* dst = static_cast<char*>(recv) + at;
        const void* src = r == rank_ ? send : dst;
        check(nccl().broadcast(src, dst, static_cast<std::size_t>(bytes[r]), ncclUint8, r, comm_, stream()),
              "ncclBroadcast");
        at += bytes[r];
      }
      group.end();
    }
    after();
  }

  std::string describe() const override {
    return "NCCL " + version_ + " on cuda:" + std::to_string(device_) + " (" + std::to_string(size_) + " ranks)";
  }

  bool serves(const Communicator& host) const { return host.rank() == rank_ && host.size() == size_; }

 private:
  /// The legacy default stream, which torch uses unless told otherwise.
  static cudaStream_t stream() { return nullptr; }
  /// The input may have been produced on any stream of the device: wait for all of them.
  static void before() { check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); }
  /// Results are in place when the call returns.
  static void after() { check(cudaStreamSynchronize(stream()), "cudaStreamSynchronize"); }
  ncclComm_t comm_ = nullptr;
  int device_ = 0, rank_ = 0, size_ = 1;
  std::string version_;
};

/// Per (communicator, device): the collectives, or null with the reason when a rank cannot
/// use NCCL. Kept for the process (intentionally never destroyed, see the file comment).
struct Slot {
  std::unique_ptr<NcclCollectives> collectives;
  std::string why_not;
};

Slot& slot_for(Communicator& comm, int device) {
  static std::mutex mutex;
  static auto* slots = new std::map<std::pair<const Communicator*, int>, Slot>();
  std::lock_guard<std::mutex> lock(mutex);
  auto [it, made] = slots->try_emplace({&comm, device});
  Slot& s = it->second;
  if (made) {
    s.why_not = why_not(comm, device);
    if (comm.any(!s.why_not.empty())) {  // every rank falls back together
      if (s.why_not.empty()) s.why_not = std::string(kWhat) + "another rank cannot use NCCL";
    } else {
      s.collectives = std::make_unique<NcclCollectives>(comm, device);
    }
  } else if (s.collectives && !s.collectives->serves(comm)) {
    throw Error(std::string(kWhat) + "a communicator at a reused address (internal error)");
  }
  return s;
}

}  // namespace

bool device_collectives_built() { return true; }

DeviceCollectives& device_collectives(Communicator& comm, int device) {
  Slot& s = slot_for(comm, device);
  if (!s.collectives) throw Error(s.why_not);
  return *s.collectives;
}

DeviceCollectives* device_collectives_if_usable(Communicator& comm, int device) {
  Slot& s = slot_for(comm, device);
  if (!s.collectives) {
    static std::once_flag warned;
    std::call_once(warned, [&] {
      if (comm.is_root()) log::warn(s.why_not + "; device tensors are reduced through host buffers");
    });
  }
  return s.collectives.get();
}

}  // namespace nnvmc::parallel
