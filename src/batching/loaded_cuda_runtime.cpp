/// CUDA runtime queries through the runtime library already in the process (loaded_cuda_runtime
/// in cuda_runtime.hpp): builds without nnvmc's CUDA part reach the GPU through libtorch's.
#include <dlfcn.h>

#include <cstddef>
#include <cstdint>
#include <optional>

#include "batching/cuda_runtime.hpp"

namespace nnvmc::batching {

namespace {
/// `name` from the CUDA runtime already loaded: global symbols first (nnvmc's own libcudart, or
/// one libtorch_cuda.so brought in with RTLD_GLOBAL), then a libcudart loaded by someone else.
void* runtime_symbol(const char* name) {
  if (void* f = dlsym(RTLD_DEFAULT, name)) return f;
  for (const char* lib : {"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so"})
    if (void* h = dlopen(lib, RTLD_LAZY | RTLD_NOLOAD)) {
      void* f = dlsym(h, name);
      dlclose(h);  // (NOLOAD took a reference only)
      if (f) return f;
    }
  return nullptr;
}
}  // namespace

std::optional<std::int64_t> loaded_runtime_free_bytes(int index) {
  using GetDevice = int (*)(int*);
  using SetDevice = int (*)(int);
  using MemGetInfo = int (*)(std::size_t*, std::size_t*);
  using GetLastError = int (*)();
  const auto get = reinterpret_cast<GetDevice>(runtime_symbol("cudaGetDevice"));
  const auto set = reinterpret_cast<SetDevice>(runtime_symbol("cudaSetDevice"));
  const auto info = reinterpret_cast<MemGetInfo>(runtime_symbol("cudaMemGetInfo"));
  const auto last_error = reinterpret_cast<GetLastError>(runtime_symbol("cudaGetLastError"));
  if (!get || !set || !info || !last_error) return std::nullopt;
  int previous = 0;
  std::size_t free_b = 0, total = 0;
  bool ok = get(&previous) == 0;  // cudaSuccess
  const bool switch_device = ok && previous != index;
  if (switch_device) ok = set(index) == 0;
  if (ok) ok = info(&free_b, &total) == 0;
  if (switch_device) set(previous);
  if (!ok) {
    last_error();  // clear it: not for a later kernel launch to report
    return std::nullopt;
  }
  return static_cast<std::int64_t>(free_b);
}

}  // namespace nnvmc::batching
