#include "profile/roofline.hpp"

#include <torch/torch.h>

#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "core/log.hpp"

namespace nnvmc::profile {

double CpuPeak::gflops_per_core(bool float32) const {
  return ghz * flops_per_cycle_f64 * (float32 ? 2 : 1);
}

CpuPeak read_cpu_peak(const std::string& path) {
  CpuPeak p;
  std::ifstream in(path);
  std::string line, flags, vendor;
  double mhz = 0;
  int family = 0;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    key.erase(key.find_last_not_of(" \t") + 1);
    const std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (key == "processor") ++p.cores;
    else if (key == "model name" && p.model.empty()) p.model = value;
    else if (key == "flags" && flags.empty()) flags = " " + value + " ";
    else if (key == "vendor_id" && vendor.empty()) vendor = value;
    else if (key == "cpu family" && family == 0) family = std::atoi(value.c_str());
    else if (key == "cpu MHz") mhz = std::max(mhz, std::atof(value.c_str()));
  }
  double ghz = mhz / 1000.0;
  std::string clock_source = strfmt("cpu MHz %.0f", mhz);
  std::smatch m;
  if (std::regex_search(p.model, m, std::regex("@ *([0-9.]+) *GHz")) && std::stod(m[1]) > ghz) {
    ghz = std::stod(m[1]);
    clock_source = "model name";
  }
  for (int c = 0; c < std::max(1, p.cores); ++c) {
    std::ifstream f("/sys/devices/system/cpu/cpu" + std::to_string(c) + "/cpufreq/cpuinfo_max_freq");
    double khz = 0;
    if (f >> khz && khz / 1e6 > ghz) {
      ghz = khz / 1e6;
      clock_source = "cpufreq cpuinfo_max_freq";
    }
  }
  p.ghz = ghz;
  const auto has = [&](const char* f) { return flags.find(std::string(" ") + f + " ") != std::string::npos; };
  std::string simd;
  // Zen 4 (AMD family 25 with AVX-512) runs AVX-512 on 256-bit units: no more FLOP per cycle than AVX2.
  const bool avx512_on_256_bit_units = vendor == "AuthenticAMD" && family == 25;
  if (has("avx512f") && avx512_on_256_bit_units)
    p.flops_per_cycle_f64 = 16, simd = "AVX-512 on 256-bit units (AMD Zen 4): 2 FMA pipes x 4 doubles x 2";
  else if (has("avx512f")) p.flops_per_cycle_f64 = 32, simd = "AVX-512: 2 FMA pipes x 8 doubles x 2";
  else if (has("avx2") && has("fma")) p.flops_per_cycle_f64 = 16, simd = "AVX2+FMA: 2 FMA pipes x 4 doubles x 2";
  else if (has("avx")) p.flops_per_cycle_f64 = 8, simd = "AVX: 4-wide add + 4-wide multiply";
  else if (has("sse2")) p.flops_per_cycle_f64 = 4, simd = "SSE2: 2-wide add + 2-wide multiply";
  else p.flops_per_cycle_f64 = 2, simd = "scalar";
  p.assumption = strfmt("%.2f GHz (%s; turbo may exceed it) x %d float64 FLOP/cycle per core (%s; float32 twice)",
                        ghz, clock_source.c_str(), p.flops_per_cycle_f64, simd.c_str());
  return p;
}

namespace {

using Clock = std::chrono::steady_clock;

void sync(const torch::Device& d) {
  if (d.is_cuda())
    c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->synchronizeDevice(d.has_index() ? d.index() : 0);
}

template <class F> double best_seconds(const torch::Device& d, int repeats, F&& f) {
  f();  // warm-up (page faults, library initialisation)
  sync(d);
  double best = 1e300;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = Clock::now();
    f();
    sync(d);
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return best;
}

}  // namespace

Roofline measure_roofline(const std::string& device, const std::string& dtype, int gemm_size,
                          long long triad_elements, int repeats) {
  Roofline r;
  const torch::Device d(device);
  r.device = device;
  r.dtype = dtype;
  r.threads = torch::get_num_threads();
  const bool f32 = dtype == "float32";
  const auto opts = torch::TensorOptions().dtype(f32 ? torch::kFloat32 : torch::kFloat64).device(d);
  torch::NoGradGuard no_grad;
  r.gemm_size = gemm_size > 0 ? gemm_size : (d.is_cuda() ? 8192 : 1024);
  {
    const auto a = torch::randn({r.gemm_size, r.gemm_size}, opts), b = torch::randn({r.gemm_size, r.gemm_size}, opts);
    auto c = torch::empty({r.gemm_size, r.gemm_size}, opts);
    const double s = best_seconds(d, repeats, [&] { torch::mm_out(c, a, b); });
    r.peak_gflops = 2.0 * std::pow(static_cast<double>(r.gemm_size), 3) / s * 1e-9;
  }
  {
    const long long n = triad_elements > 0 ? triad_elements : (d.is_cuda() ? (1LL << 27) : (1LL << 23));
    const auto b = torch::rand({n}, opts), c = torch::rand({n}, opts);
    auto a = torch::empty({n}, opts);
    const double s = best_seconds(d, repeats + 2, [&] { torch::add_out(a, b, c, 3.0); });
    const double bytes = 3.0 * static_cast<double>(n) * (f32 ? 4 : 8);
    r.triad_mib = bytes / (1024.0 * 1024.0);
    r.bandwidth_gbs = bytes / s * 1e-9;
  }
  if (!d.is_cuda()) {
    const CpuPeak p = read_cpu_peak();
    r.theoretical_gflops = p.gflops_per_core(f32) * std::min(r.threads, std::max(1, p.cores));
  }
  return r;
}

}  // namespace nnvmc::profile
