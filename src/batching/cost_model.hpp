#pragma once
/// @file cost_model.hpp
/// Rates the planner uses to compare plans: time = FLOPs / (GEMM rate × shape efficiency) +
/// transfers / link rate + copies / memory bandwidth + batches × per-batch overhead.
/// The rates describe one device: CostModel::measure() benchmarks it briefly the first time and
/// keeps the result on disk, so later runs plan with the same numbers. Torch-free header.
#include <optional>
#include <string>

namespace nnvmc::batching {

/// Machine rates for the cost model (measure() fills them from short benchmarks).
struct CostModel {
  double gemm_flops_per_s = 2e10;     ///< sustained GEMM rate of a square GEMM of side gemm_ref_dim
  double transfer_bytes_per_s = 1e10; ///< host↔device copy rate (unused when all is resident)
  double copy_bytes_per_s = 5e9;      ///< on-device transposition/copy bandwidth
  /// Staged plans (host operands, device GEMMs), whose copy_bytes_per_s is the host's: the
  /// bandwidth of the layout copies of intermediates, which stay on the device; 0: the same as
  /// copy_bytes_per_s. Not measured or cached (the planner's caller sets it).
  double device_copy_bytes_per_s = 0;
  double batch_overhead_s = 2e-5;     ///< fixed cost per batch (launches, slicing)
  /// Shape efficiency: a GEMM dimension d (m, n or k) runs at (d/(d + h))/(r/(r + h)) of the
  /// rate (capped at 1), h = gemm_half_dim, r = gemm_ref_dim. CPU: h = 24, r = 512 (MKL on this
  /// project's CPU: m = 70, n = 3430, k = 250 ran at 0.75 of the rate of m = n = 490); a GPU
  /// needs far larger GEMMs for its peak (measure() fits h from a thin GEMM).
  double gemm_half_dim = 24;
  double gemm_ref_dim = 512;  ///< side of the square GEMM the rate was measured with
  /// CPU: a GEMM-layout copy larger than this is made in tiles that stay in cache (measure():
  /// a quarter of the last-level cache); 0: never tile (GPU, and the deterministic default).
  double tile_bytes = 0;
  /// Narrowest tile GEMM dimension along the tiled group (one-entry tiles of width 95 ran the
  /// (H2O)5 ladder's second step at 60 % of the BLAS rate).
  double tile_min_width = 256;

  /// Efficiency factor of a GEMM dimension d (≤ 1).
  double dim_efficiency(double d) const;

  /// The rates of `device` ("cpu" or "cuda[:N]"): from the process's memory, else from the
  /// on-disk cache (cache_file(), keyed by device_key()), else measured with ~0.1 s of
  /// micro-benchmarks (GEMM rate and shape efficiency, copy bandwidth, link rate) and stored
  /// there. NNVMC_COST_MODEL=measure re-measures (and overwrites the entry).
  static CostModel measure(const std::string& device);
  /// Makes `m` the rates measure(device) returns in this process from now on (ranks of an MPI
  /// run adopting rank 0's measurement); no cache file is written.
  static void remember(const std::string& device, const CostModel& m);
  /// Forgets the rates measure() keeps in the process (the disk cache stays; for tests).
  static void forget_measured();
  /// Measures now, without any cache.
  static CostModel benchmark(const std::string& device);

  /// "$NNVMC_CACHE_DIR/cost_model.tsv", else "$XDG_CACHE_HOME/nnvmc/...", else "~/.cache/nnvmc/...".
  static std::string cache_file();
  /// What identifies the measured hardware: device, CPU model and thread count, or GPU name.
  static std::string device_key(const std::string& device);
  /// The entry `key` of `file`, if present and well-formed.
  static std::optional<CostModel> read_cached(const std::string& file, const std::string& key);
  /// Stores (replaces) the entry `key` in `file`; false when the file cannot be written.
  static bool write_cached(const std::string& file, const std::string& key, const CostModel& m);
};

}  // namespace nnvmc::batching
