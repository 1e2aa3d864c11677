/// Measured rates for the cost model (short micro-benchmarks, cached per device).
#include "batching/cost_model.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <map>
#include <mutex>

#include "batching/backend.hpp"

namespace nnvmc::batching {

namespace {
template <class F>
double best_seconds(F&& f, int reps) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}
/// Size of cpu0's largest unified cache from sysfs (virtual machines often misreport it to
/// sysconf); 32 MiB when unknown.
std::int64_t last_level_cache_bytes() {
  std::int64_t best = 0;
  for (int i = 0; i < 8; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::ifstream type(dir + "type"), size(dir + "size");
    std::string t, s;
    if (!(type >> t) || !(size >> s) || t != "Unified" || s.empty()) continue;
    const char unit = s.back();
    const std::int64_t v = std::atoll(s.c_str());
    best = std::max(best, unit == 'K' ? v << 10 : unit == 'M' ? v << 20 : v);
  }
  return best > 0 ? best : std::int64_t(32) << 20;
}
}  // namespace

CostModel CostModel::measure(const std::string& device) {
  static std::mutex mu;
  static std::map<std::string, CostModel> cache;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(device); it != cache.end()) return it->second;
  ensure_device_runtime(device);
  CostModel m;
  const auto opts = at::TensorOptions().dtype(at::kDouble).device(c10::Device(device));
  const bool cuda = device != "cpu";
  auto sync = [&] {
    if (cuda) at::zeros({1}, opts).item<double>();  // waits for the stream
  };
  const std::int64_t n = cuda ? 4096 : 512;
  at::Tensor a = at::rand({n, n}, opts), b = at::rand({n, n}, opts), c = at::empty({n, n}, opts);
  at::mm_out(c, a, b);  // warm-up
  sync();
  m.gemm_flops_per_s = 2.0 * double(n) * n * n / best_seconds([&] { at::mm_out(c, a, b); sync(); }, 3);
  at::Tensor big = at::rand({4 << 20}, opts);  // 32 MiB
  at::Tensor perm = at::empty({2048, 2048}, opts);
  m.copy_bytes_per_s =
      2.0 * double(big.nbytes()) / best_seconds([&] { perm.copy_(big.view({2048, 2048}).t()); sync(); }, 3);
  if (cuda) {
    at::Tensor host = at::rand({4 << 20}, at::TensorOptions().dtype(at::kDouble).pinned_memory(true));
    m.transfer_bytes_per_s =
        double(host.nbytes()) / best_seconds([&] { big.copy_(host); sync(); }, 3);
  }
  m.batch_overhead_s = cuda ? 3e-5 : 1e-5;
  if (!cuda) m.tile_bytes = std::clamp(double(last_level_cache_bytes()) / 4, double(1 << 20), double(16 << 20));
  cache[device] = m;
  return m;
}

}  // namespace nnvmc::batching
