// The strided gather of DeviceOps::strided_copy on CUDA: one thread per destination element
// (grid-stride loop), the destination written in order (coalesced), the source read through
// its strides; 32-bit index arithmetic when the copy is small enough. A layout copy is
// bandwidth-bound; reads of a transposing copy are not coalesced, which a shared-memory tiled
// kernel would fix if these copies show up in the GPU profile.
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

template <typename T, typename I>
__global__ void gather(const T* __restrict__ src, T* __restrict__ dst, Shape shape, I n) {
  for (I i = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); i < n; i += I(gridDim.x) * I(blockDim.x)) {
    I rest = i, offset = 0;
    for (int d = shape.rank - 1; d >= 0; --d) {
      const I size = I(shape.sizes[d]);
      offset += (rest % size) * I(shape.strides[d]);
      rest /= size;
    }
    dst[i] = src[offset];
  }
}

template <typename T>
void launch(const StridedCopy& call, const Shape& shape, long long n, long long span, cudaStream_t s) {
  const int threads = 256;
  const long long want = (n + threads - 1) / threads;
  const int blocks = int(want < 65535 * 8 ? want : 65535 * 8);
  const auto* src = static_cast<const T*>(call.src);
  auto* dst = static_cast<T*>(call.dst);
  // 32-bit indices when every index and offset fits (with room for the grid-stride step)
  if (n < (1LL << 30) && span < (1LL << 30))
    gather<T, unsigned><<<blocks, threads, 0, s>>>(src, dst, shape, unsigned(n));
  else
    gather<T, long long><<<blocks, threads, 0, s>>>(src, dst, shape, n);
}

}  // namespace

void launch_strided_copy(const StridedCopy& call, void* stream) {
  Shape shape{};
  shape.rank = call.rank;
  long long n = 1, span = 1;
  for (int d = 0; d < call.rank; ++d) {
    shape.sizes[d] = call.sizes[d];
    shape.strides[d] = call.strides[d];
    n *= call.sizes[d];
    span += (call.sizes[d] - 1) * call.strides[d];
  }
  if (n == 0) return;
  const auto s = static_cast<cudaStream_t>(stream);
  if (call.f64) launch<double>(call, shape, n, span, s);
  else launch<float>(call, shape, n, span, s);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw Error(std::string("CUDA strided copy launch: ") + cudaGetErrorString(e));
}

}  // namespace nnvmc::batching
