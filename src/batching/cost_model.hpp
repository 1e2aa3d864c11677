#pragma once
/// @file cost_model.hpp
/// Rates the planner uses to compare plans: time = FLOPs / GEMM rate + transfers / link
/// rate + copies / memory bandwidth + batches × per-batch overhead. Torch-free header.
#include <string>

namespace nnvmc::batching {

/// Machine rates for the cost model (measure() fills them from short benchmarks).
struct CostModel {
  double gemm_flops_per_s = 2e10;     ///< sustained double-precision GEMM rate
  double transfer_bytes_per_s = 1e10; ///< host↔device copy rate (unused when all is resident)
  double copy_bytes_per_s = 5e9;      ///< on-device transposition/copy bandwidth
  double batch_overhead_s = 2e-5;     ///< fixed cost per batch (launches, slicing)
  /// CPU: a GEMM-layout copy larger than this is made in tiles that stay in cache (measure():
  /// a quarter of the last-level cache); 0: never tile (GPU, and the deterministic default).
  double tile_bytes = 0;
  /// Narrowest tile GEMM dimension along the tiled group (one-entry tiles of width 95 ran the
  /// (H2O)5 ladder's second step at 60 % of the BLAS rate).
  double tile_min_width = 256;

  /// Measures the rates on `device` ("cpu" or "cuda[:N]") with ~0.1 s of micro-benchmarks;
  /// cached per device for the process.
  static CostModel measure(const std::string& device);
};

}  // namespace nnvmc::batching
