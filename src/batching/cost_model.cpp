/// Measured rates for the cost model: short micro-benchmarks, cached per device in the process
/// and on disk.
#include "batching/cost_model.hpp"

#include <ATen/ATen.h>
#include <c10/core/CachingDeviceAllocator.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "batching/backend.hpp"
#include "batching/cuda_runtime.hpp"

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
std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) {
      const auto p = line.find(':');
      return p == std::string::npos ? line : line.substr(p + 2);
    }
  return "unknown cpu";
}
int cuda_index(const std::string& device) {
  const auto p = device.find(':');
  return p == std::string::npos ? 0 : std::atoi(device.c_str() + p + 1);
}
constexpr const char* kFields = "gemm_flops_per_s transfer_bytes_per_s copy_bytes_per_s batch_overhead_s "
                                "gemm_half_dim gemm_ref_dim tile_bytes tile_min_width";
}  // namespace

double CostModel::dim_efficiency(double d) const {
  return std::min(1.0, (d / (d + gemm_half_dim)) / (gemm_ref_dim / (gemm_ref_dim + gemm_half_dim)));
}

std::string CostModel::cache_file() {
  namespace fs = std::filesystem;
  if (const char* d = std::getenv("NNVMC_CACHE_DIR"); d && *d) return (fs::path(d) / "cost_model.tsv").string();
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return (fs::path(x) / "nnvmc" / "cost_model.tsv").string();
  if (const char* h = std::getenv("HOME"); h && *h) return (fs::path(h) / ".cache" / "nnvmc" / "cost_model.tsv").string();
  return "";
}

std::string CostModel::device_key(const std::string& device) {
  if (device == "cpu") return "cpu|" + cpu_model_name() + "|threads " + std::to_string(at::get_num_threads());
  return device + "|" + cuda_device_name(cuda_index(device));
}

std::optional<CostModel> CostModel::read_cached(const std::string& file, const std::string& key) {
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    const auto tab = line.find('\t');
    if (tab == std::string::npos || line.compare(0, tab, key) != 0 || tab != key.size()) continue;
    std::istringstream vs(line.substr(tab + 1));
    CostModel m;
    if (!(vs >> m.gemm_flops_per_s >> m.transfer_bytes_per_s >> m.copy_bytes_per_s >> m.batch_overhead_s >>
          m.gemm_half_dim >> m.gemm_ref_dim >> m.tile_bytes >> m.tile_min_width))
      continue;
    // A hand-edited or damaged line (zero, negative or absurd rates) is measured again: the
    // planner would otherwise pick its splits from it.
    const auto within = [](double x, double lo, double hi) { return std::isfinite(x) && x >= lo && x <= hi; };
    if (within(m.gemm_flops_per_s, 1e7, 1e17) && within(m.transfer_bytes_per_s, 1e6, 1e14) &&
        within(m.copy_bytes_per_s, 1e6, 1e14) && within(m.batch_overhead_s, 0, 1) && within(m.gemm_half_dim, 0, 1e5) &&
        within(m.gemm_ref_dim, 1, 1e6) && within(m.tile_bytes, 0, 1e12) && within(m.tile_min_width, 0, 1e6))
      return m;
  }
  return std::nullopt;
}

bool CostModel::write_cached(const std::string& file, const std::string& key, const CostModel& m) {
  namespace fs = std::filesystem;
  if (file.empty()) return false;
  std::vector<std::string> keep;
  {
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);)
      if (!line.empty() && line[0] != '#' && line.rfind(key + "\t", 0) != 0) keep.push_back(line);
  }
  std::error_code ec;
  fs::create_directories(fs::path(file).parent_path(), ec);
  const std::string tmp = file + ".tmp" + std::to_string(::getpid());
  bool written = false;
  {
    std::ofstream out(tmp);
    out << "# nnvmc cost-model rates per device (CostModel::measure); delete to re-measure. key\t" << kFields << "\n";
    for (const auto& l : keep) out << l << "\n";
    out.precision(17);  // round-trips every double
    out << key << '\t' << m.gemm_flops_per_s << ' ' << m.transfer_bytes_per_s << ' ' << m.copy_bytes_per_s << ' '
        << m.batch_overhead_s << ' ' << m.gemm_half_dim << ' ' << m.gemm_ref_dim << ' ' << m.tile_bytes << ' '
        << m.tile_min_width << "\n";
    out.close();  // flushes: a full disk fails here, not in the destructor
    written = !out.fail();
  }
  if (written) fs::rename(tmp, file, ec);  // atomic: concurrent processes see the old or the new file
  if (!written || ec) {  // a cache that cannot be written is measured again next time
    std::error_code ignored;
    fs::remove(tmp, ignored);
    return false;
  }
  return true;
}

namespace {
/// The rates of CostModel::benchmark; its tensors are gone when it returns.
CostModel measure_rates(const std::string& device) {
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
  m.gemm_ref_dim = double(n);
  if (cuda) {
    // shape efficiency from a thin GEMM (n × n × w): measured ratio q = rate(w)/rate(n) fits
    // (w/(w + h))/(n/(n + h)) = q  →  h = w·n·(1 − q)/(q·n − w)
    const std::int64_t w = 256;
    at::Tensor bt = at::rand({n, w}, opts), ct = at::empty({n, w}, opts);
    at::mm_out(ct, a, bt);
    sync();
    const double rate_w = 2.0 * double(n) * n * w / best_seconds([&] { at::mm_out(ct, a, bt); sync(); }, 5);
    const double q = std::clamp(rate_w / m.gemm_flops_per_s, 0.05, 0.999);
    m.gemm_half_dim = std::clamp(double(w) * double(n) * (1 - q) / std::max(q * double(n) - double(w), 1.0), 1.0, 8192.0);
  }
  at::Tensor big = at::rand({4 << 20}, opts);  // 32 MiB
  at::Tensor perm = at::empty({2048, 2048}, opts);
  m.copy_bytes_per_s =
      2.0 * double(big.nbytes()) / best_seconds([&] { perm.copy_(big.view({2048, 2048}).t()); sync(); }, 3);
  if (cuda) {
    at::Tensor host = at::rand({4 << 20}, at::TensorOptions().dtype(at::kDouble).pinned_memory(true));
    m.transfer_bytes_per_s = double(host.nbytes()) / best_seconds([&] { big.copy_(host); sync(); }, 3);
  }
  m.batch_overhead_s = cuda ? 3e-5 : 1e-5;
  if (!cuda) m.tile_bytes = std::clamp(double(last_level_cache_bytes()) / 4, double(1 << 20), double(16 << 20));
  return m;
}
}  // namespace

CostModel CostModel::benchmark(const std::string& device) {
  ensure_device_runtime(device);
  const CostModel m = measure_rates(device);
  // torch's caching allocator would keep the benchmark's ~0.5 GiB for the rest of the process,
  // out of reach of the staged backend's cudaMalloc and unseen by its budget check
  if (device != "cpu") c10::getDeviceAllocator(c10::DeviceType::CUDA)->emptyCache();
  return m;
}

namespace {
std::mutex& measured_mutex() {
  static std::mutex mu;
  return mu;
}
std::map<std::string, CostModel>& measured() {
  static std::map<std::string, CostModel> memory;
  return memory;
}
}  // namespace

void CostModel::remember(const std::string& device, const CostModel& m) {
  std::lock_guard<std::mutex> lock(measured_mutex());
  measured()[device_key(device)] = m;
}

void CostModel::forget_measured() {
  std::lock_guard<std::mutex> lock(measured_mutex());
  measured().clear();
}

CostModel CostModel::measure(const std::string& device) {
  std::lock_guard<std::mutex> lock(measured_mutex());
  auto& memory = measured();
  const std::string key = device_key(device);
  if (auto it = memory.find(key); it != memory.end()) return it->second;
  const char* mode = std::getenv("NNVMC_COST_MODEL");
  const bool remeasure = mode && std::string(mode) == "measure";
  const std::string file = cache_file();
  std::optional<CostModel> m = remeasure || file.empty() ? std::nullopt : read_cached(file, key);
  if (!m) {
    m = benchmark(device);
    write_cached(file, key, *m);  // best effort: a read-only home just measures every time
  }
  memory[key] = *m;
  return *m;
}

}  // namespace nnvmc::batching
