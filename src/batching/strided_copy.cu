// The strided gather of DeviceOps::strided_copy on CUDA: one thread per destination element
// (grid-stride loop), the destination written in order (coalesced), the source read through
// its strides. A layout copy is bandwidth-bound; reads of a transposing copy are not coalesced,
// which a tiled kernel would fix if the copies ever showed up in the profile.
#include <cuda_runtime.h>

#include <string>

#include "batching/strided_copy.hpp"
#include "core/errors.hpp"

namespace nnvmc::batching {

namespace {

struct Shape {
  int rank;
  long long sizes[kMaxCopyRank];
  long long strides[kMaxCopyRank];
};

template <typename T>
__global__ void gather(const T* __restrict__ src, T* __restrict__ dst, Shape shape, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    long long rest = i, offset = 0;
    for (int d = shape.rank - 1; d >= 0; --d) {
      const long long idx = rest % shape.sizes[d];
      rest /= shape.sizes[d];
      offset += idx * shape.strides[d];
    }
    dst[i] = src[offset];
  }
}

}  // namespace

void launch_strided_copy(const StridedCopy& call, void* stream) {
  Shape shape{};
  shape.rank = call.rank;
  long long n = 1;
  for (int d = 0; d < call.rank; ++d) {
    shape.sizes[d] = call.sizes[d];
    shape.strides[d] = call.strides[d];
    n *= call.sizes[d];
  }
  if (n == 0) return;
  const int threads = 256;
  const long long want = (n + threads - 1) / threads;
  const int blocks = int(want < 65535 * 8 ? want : 65535 * 8);
  const auto s = static_cast<cudaStream_t>(stream);
  if (call.f64)
    gather<<<blocks, threads, 0, s>>>(static_cast<const double*>(call.src), static_cast<double*>(call.dst), shape, n);
  else
    gather<<<blocks, threads, 0, s>>>(static_cast<const float*>(call.src), static_cast<float*>(call.dst), shape, n);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw Error(std::string("CUDA strided copy launch: ") + cudaGetErrorString(e));
}

}  // namespace nnvmc::batching
