/// CUDA queries of a build without NNVMC_WITH_CUDA.
#include <memory>
#include <string>

#include "batching/backend.hpp"
#include "batching/cuda_runtime.hpp"
#include "core/errors.hpp"

namespace nnvmc::batching {

std::int64_t cuda_free_bytes(int index) {
  // the GPU is reached through libtorch's CUDA library (ensure_device_runtime loads it) and its runtime
  if (const auto free_b = loaded_runtime_free_bytes(index)) return *free_b;
  throw BudgetError("memory budget 'auto' on cuda: no CUDA runtime answered for device " + std::to_string(index) +
                    " (this build has no CUDA part of its own; give the budget in bytes, or configure with "
                    "-DNNVMC_WITH_CUDA=ON)");
}

int cuda_device_count() { return 0; }

std::string cuda_device_name(int) { return ""; }

std::string cuda_pci_bus_id(int) { return ""; }

bool built_with_cuda() { return false; }

CudaEventClock::CudaEventClock(int) { throw Error("CUDA event clock: this build has no CUDA (NNVMC_WITH_CUDA)"); }
CudaEventClock::~CudaEventClock() = default;
void CudaEventClock::start() {}
double CudaEventClock::stop_seconds() { return 0; }

CudaIntervalClock::CudaIntervalClock(int) { throw Error("CUDA interval clock: this build has no CUDA (NNVMC_WITH_CUDA)"); }
CudaIntervalClock::~CudaIntervalClock() = default;
std::int64_t CudaIntervalClock::begin() { return 0; }
void CudaIntervalClock::end(std::int64_t) {}
std::vector<std::pair<std::int64_t, double>> CudaIntervalClock::harvest(bool) { return {}; }
void* CudaIntervalClock::record_event() { return nullptr; }

std::unique_ptr<GemmBackend> make_cublas_backend(int, StagedGemmOptions) {
  throw InputError("backend 'cublas' needs a build with -DNNVMC_WITH_CUDA=ON");
}

}  // namespace nnvmc::batching
