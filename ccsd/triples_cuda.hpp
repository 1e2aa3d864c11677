#pragma once
/// @file triples_cuda.hpp
/// The CUDA kernels of (T)'s per-triple elementwise work (triples_cuda.cu, compiled by nvcc only
/// with NNVMC_WITH_CUDA): the sum of the six permuted GEMM results into W, and the triple's
/// energy, each one kernel instead of the ~30 torch-op passes over [v, v, v] of the torch-op
/// path. Torch-free (raw device pointers); the stream is a cudaStream_t passed as void*.
/// triples_kernels.cpp selects them for CUDA tensors under KernelChoice::automatic.

namespace nnvmc::ccsd::cuda {

/// The most views one sum takes (six orderings, each with its two GEMM parts).
constexpr int kMaxViews = 12;

/// out[x, y, z] = Σ_{s < n_plus} view_s[x, y, z] − Σ_{s ≥ n_plus} view_s[x, y, z], view s at
/// src[s] with element strides strides[s]; out contiguous [n0, n1, n2]. Type double when f64,
/// float otherwise.
struct SumOfViews {
  const void* src[kMaxViews] = {};
  long long strides[kMaxViews][3] = {};
  int n_views = 0, n_plus = 0;
  void* out = nullptr;
  long long n0 = 0, n1 = 0, n2 = 0;
  bool f64 = true;
};

/// *sum += Σ_{a ≥ b ≥ c} (distinct orderings of (a, b, c) / 6) · Σ_π W_π r3(V)_π / D_abc
/// (triple_visit of triples_visit.hpp, as the host loop), in float64. w contiguous [v, v, v]; ti, tj, tk
/// [v]; gjk, gik, gij contiguous [v, v], all of W's type; ev [v] float64; sum one float64;
/// partials a float64 scratch of n_partials ≥ triple_energy_partials() (the per-block sums,
/// added in a fixed order so that the energy does not change from run to run).
struct TripleEnergy {
  const void* w = nullptr;
  const void *ti = nullptr, *tj = nullptr, *tk = nullptr;
  const void *gjk = nullptr, *gik = nullptr, *gij = nullptr;
  const double* ev = nullptr;
  double e_ijk = 0;
  long long v = 0;
  bool f64 = true;
  double* sum = nullptr;
  double* partials = nullptr;
  int n_partials = 0;
};

/// The size of TripleEnergy's scratch.
int triple_energy_partials();

/// Enqueue on CUDA stream `stream` of the current device. @throws Error when a launch fails.
void launch_sum_of_views(const SumOfViews& call, void* stream);
void launch_triple_energy(const TripleEnergy& call, void* stream);  ///< @copydoc launch_sum_of_views

}  // namespace nnvmc::ccsd::cuda
