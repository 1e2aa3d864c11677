// (T)'s per-triple elementwise kernels on CUDA (triples_cuda.hpp).
//  - sum of views: one thread per element of W, the destination written in order (coalesced),
//    each view read through its strides (the permuted ones are not coalesced; their lines are
//    reused by the neighbouring rows' blocks through L2).
//  - triple energy: one warp per virtual pair a ≥ b, its lanes over c ≤ b; each visit is the host
//    loop's (triple_visit, triples_visit.hpp): six W values, V formed on the fly, float64.
//    Each block writes its partial sum and one small kernel adds them in a fixed order, so the
//    energy is the same from run to run (no floating-point atomics).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "ccsd/triples_cuda.hpp"
#include "ccsd/triples_visit.hpp"
#include "core/errors.hpp"

namespace nnvmc::ccsd::cuda {

namespace {

constexpr int kSumThreads = 256;
constexpr int kEnergyThreads = 128;  // four warps, one virtual pair each at a time
constexpr int kEnergyBlocks = 1024;  // partial sums per triple (fixed: the order of the final sum)
constexpr int kFinalThreads = 256;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(std::string("CUDA (T) ") + what + ": " + cudaGetErrorString(e));
}

template <typename T>
struct Views {
  const T* p[kMaxViews];
  long long s[kMaxViews][3];
  int n, n_plus;
};

template <typename T>
__global__ void sum_views(Views<T> vw, T* __restrict__ out, long long n1, long long n2) {
  const long long z = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (z >= n2) return;
  const long long y = blockIdx.y, x = blockIdx.z;
  T acc = 0;
  for (int s = 0; s < vw.n; ++s) {
    const T val = vw.p[s][x * vw.s[s][0] + y * vw.s[s][1] + z * vw.s[s][2]];
    acc = s < vw.n_plus ? acc + val : acc - val;
  }
  out[(x * n1 + y) * n2 + z] = acc;
}

/// Sum of the 32 lanes' values, in lane 0.
__device__ double warp_sum(double x) {
  for (int off = 16; off > 0; off >>= 1) x += __shfl_down_sync(0xffffffffu, x, off);
  return x;
}

template <typename T, typename I>
__global__ void triple_energy_blocks(TripleEnergy call, double* __restrict__ partials) {
  const TripleArrays<T, I> x{static_cast<const T*>(call.w),   static_cast<const T*>(call.ti),
                             static_cast<const T*>(call.tj),  static_cast<const T*>(call.tk),
                             static_cast<const T*>(call.gjk), static_cast<const T*>(call.gik),
                             static_cast<const T*>(call.gij), call.ev,
                             I(call.v)};
  const long long pairs = call.v * (call.v + 1) / 2;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  double acc = 0;
  for (long long p = (long long)blockIdx.x * warps + warp; p < pairs; p += (long long)gridDim.x * warps) {
    long long a_, b_;
    pair_of(p, a_, b_);
    const I a = I(a_), b = I(b_);
    const double dab = call.e_ijk - call.ev[a] - call.ev[b];
    for (I c = I(lane); c <= b; c += 32) acc += triple_visit(x, a, b, c, dab);
  }
  __shared__ double warp_sums[32];
  acc = warp_sum(acc);
  if (lane == 0) warp_sums[warp] = acc;
  __syncthreads();
  if (warp == 0) {
    acc = warp_sum(lane < warps ? warp_sums[lane] : 0.0);
    if (lane == 0) partials[blockIdx.x] = acc;
  }
}

/// *sum += Σ partials[0, n), in a fixed order.
__global__ void add_partials(const double* __restrict__ partials, int n, double* sum) {
  __shared__ double warp_sums[32];
  double acc = 0;
  for (int q = threadIdx.x; q < n; q += blockDim.x) acc += partials[q];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  acc = warp_sum(acc);
  if (lane == 0) warp_sums[warp] = acc;
  __syncthreads();
  if (warp == 0) {
    acc = warp_sum(lane < int(blockDim.x >> 5) ? warp_sums[lane] : 0.0);
    if (lane == 0) *sum += acc;
  }
}

template <typename T>
void launch_sum(const SumOfViews& call, cudaStream_t s) {
  Views<T> vw{};
  vw.n = call.n_views, vw.n_plus = call.n_plus;
  for (int q = 0; q < call.n_views; ++q) {
    vw.p[q] = static_cast<const T*>(call.src[q]);
    for (int d = 0; d < 3; ++d) vw.s[q][d] = call.strides[q][d];
  }
  const dim3 grid(unsigned((call.n2 + kSumThreads - 1) / kSumThreads), unsigned(call.n1), unsigned(call.n0));
  sum_views<T><<<grid, kSumThreads, 0, s>>>(vw, static_cast<T*>(call.out), call.n1, call.n2);
}

}  // namespace

void launch_sum_of_views(const SumOfViews& call, void* stream) {
  if (call.n_views < 1 || call.n_views > kMaxViews || call.n_plus < 1 || call.n_plus > call.n_views)
    throw Error("CUDA (T) sum of views: 1 to " + std::to_string(kMaxViews) + " views, at least one added");
  if (call.n0 > 65535 || call.n1 > 65535) throw Error("CUDA (T) sum of views: extents above 65535");
  if (call.n0 * call.n1 * call.n2 == 0) return;
  const auto s = static_cast<cudaStream_t>(stream);
  if (call.f64) launch_sum<double>(call, s);
  else launch_sum<float>(call, s);
  check(cudaGetLastError(), "sum of views launch");
}

void launch_triple_energy(const TripleEnergy& call, void* stream) {
  if (call.v < 1) return;
  const auto s = static_cast<cudaStream_t>(stream);
  const long long pairs = call.v * (call.v + 1) / 2, warps = kEnergyThreads / 32;
  const int blocks = int(std::min<long long>(kEnergyBlocks, (pairs + warps - 1) / warps));
  if (call.partials == nullptr || call.n_partials < blocks) throw Error("CUDA (T) energy: partials buffer too small");
  // 32-bit index arithmetic (fewer registers) while every offset into W fits
  const bool small = call.v * call.v * call.v < (1LL << 31);
  if (call.f64 && small) triple_energy_blocks<double, int><<<blocks, kEnergyThreads, 0, s>>>(call, call.partials);
  else if (call.f64) triple_energy_blocks<double, long long><<<blocks, kEnergyThreads, 0, s>>>(call, call.partials);
  else if (small) triple_energy_blocks<float, int><<<blocks, kEnergyThreads, 0, s>>>(call, call.partials);
  else triple_energy_blocks<float, long long><<<blocks, kEnergyThreads, 0, s>>>(call, call.partials);
  check(cudaGetLastError(), "energy launch");
  add_partials<<<1, kFinalThreads, 0, s>>>(call.partials, blocks, call.sum);
  check(cudaGetLastError(), "energy sum launch");
}

int triple_energy_partials() { return kEnergyBlocks; }

}  // namespace nnvmc::ccsd::cuda
