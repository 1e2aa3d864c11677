#pragma once
/// @file roofline.hpp
/// The machine's roofline, measured by `nnvmc profile` itself: compute peak from a large
/// matrix product (DGEMM for float64, SGEMM for float32) and memory bandwidth from a
/// STREAM-like triad a = b + s·c, both with the run's threads and device; and the theoretical
/// peak of the CPU cores from /proc/cpuinfo, to check the measurement against.
#include <string>

namespace nnvmc::profile {

/// Theoretical peak of CPU cores, read from /proc/cpuinfo (and cpufreq where present).
struct CpuPeak {
  std::string model;            ///< model name
  double ghz = 0;               ///< clock assumed: the highest of cpu MHz, "@ x GHz" and cpufreq max
  int flops_per_cycle_f64 = 0;  ///< per core: 2 FMA pipes × SIMD width × 2 (AVX-512: 32, AVX2+FMA: 16, ...)
  int cores = 0;                ///< logical CPUs counted
  double gflops_per_core(bool float32) const;  ///< ghz × flops per cycle (×2 for float32)
  std::string assumption;       ///< what was assumed, in words
};

/// Reads the CPU's model, flags and clock. Fields stay 0 when /proc/cpuinfo is unreadable.
CpuPeak read_cpu_peak(const std::string& cpuinfo_path = "/proc/cpuinfo");

/// Measured peaks.
struct Roofline {
  std::string device = "cpu";  ///< cpu | cuda:N
  std::string dtype;           ///< float64 | float32
  int threads = 1;             ///< intra-op threads during the measurement
  double peak_gflops = 0;      ///< best GEMM rate (GFLOP/s)
  int gemm_size = 0;           ///< n of the n×n GEMM
  double bandwidth_gbs = 0;    ///< best triad bandwidth (GB/s, 3 arrays × 8 or 4 bytes per element)
  double triad_mib = 0;        ///< size of the three triad arrays (MiB)
  double theoretical_gflops = 0;  ///< CPU: cores used × per-core peak (0 on CUDA)
  double ridge() const { return bandwidth_gbs > 0 ? peak_gflops / bandwidth_gbs : 0; }  ///< FLOP/byte
};

/// Measures the roofline on `device` ("cpu" or "cuda:N") in `dtype` ("float64" | "float32").
/// @param gemm_size n of the GEMM (0: 1024 on the CPU, 8192 on CUDA)
/// @param triad_elements elements per triad array (0: 2^23 on the CPU, 2^27 on CUDA)
Roofline measure_roofline(const std::string& device, const std::string& dtype, int gemm_size = 0,
                          long long triad_elements = 0, int repeats = 3);

}  // namespace nnvmc::profile
