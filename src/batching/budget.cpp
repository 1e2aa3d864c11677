#include "batching/budget.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>
#include <vector>

#include "batching/cuda_runtime.hpp"
#include "core/config.hpp"
#include "core/errors.hpp"

namespace nnvmc::batching {

namespace {
constexpr std::int64_t kUnlimited = std::numeric_limits<std::int64_t>::max();

/// A /proc/meminfo entry in bytes, or −1 when it cannot be read.
std::int64_t meminfo_bytes(const std::string& entry) {
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::int64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == entry) return kb * 1024;
  return -1;
}

/// A number from a cgroup file ("max" or a huge value: no limit, −1; unreadable: −1).
std::int64_t cgroup_number(const std::string& path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word) || word == "max") return -1;
  try {
    const auto v = std::stoll(word);
    return v <= 0 || v >= (std::int64_t{1} << 60) ? -1 : v;  // cgroup v1 writes "no limit" as ~2^63
  } catch (const std::exception&) {
    return -1;
  }
}

/// An entry of a cgroup's memory.stat in bytes (0 when absent).
std::int64_t cgroup_stat(const std::string& dir, const std::string& entry) {
  std::ifstream in(dir + "/memory.stat");
  std::string key;
  std::int64_t value = 0;
  while (in >> key >> value)
    if (key == entry) return value;
  return 0;
}

/// The memory cgroup directories this process is charged to, innermost first (a limit may sit
/// on any ancestor). cgroup v2: the unified hierarchy's "0::" line; v1: the "memory" controller.
/// Inside a container the cgroup namespace's root is the mount point, so a path that does not
/// exist below the mount is read as the mount itself.
std::vector<std::string> memory_cgroups(bool& v2) {
  std::ifstream in("/proc/self/cgroup");
  std::string line, v1_path, v2_path;
  bool has_v2 = false;
  while (std::getline(in, line)) {
    const auto a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (line.compare(0, a, "0") == 0 && controllers.empty()) has_v2 = true, v2_path = path;
    std::stringstream list(controllers);
    for (std::string c; std::getline(list, c, ',');)
      if (c == "memory") v1_path = path;
  }
  const std::string v1_mount = "/sys/fs/cgroup/memory";
  v2 = v1_path.empty() && has_v2;
  const std::string mount = v2 ? "/sys/fs/cgroup" : v1_mount;
  std::string path = v2 ? v2_path : v1_path;
  if (!v2 && v1_path.empty()) return {};
  std::vector<std::string> dirs;
  for (;;) {
    const std::string dir = mount + (path == "/" ? "" : path);
    if (std::ifstream(dir + (v2 ? "/memory.current" : "/memory.usage_in_bytes"))) dirs.push_back(dir);
    if (path.empty() || path == "/") break;
    const auto slash = path.rfind('/');
    path = slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
  }
  return dirs;
}

/// VmSize of this process (bytes), or −1.
std::int64_t own_virtual_bytes() {
  std::ifstream in("/proc/self/status");
  std::string key;
  while (in >> key) {
    if (key == "VmSize:") {
      std::int64_t kb = 0;
      in >> kb;
      return kb * 1024;
    }
    in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return -1;
}
}  // namespace

HostMemory host_memory() {
  HostMemory m;
  m.available = meminfo_bytes("MemAvailable:");
  m.limit = meminfo_bytes("MemTotal:");
  m.limit_source = "this machine's memory";
  const auto tighten = [&m](std::int64_t limit, std::int64_t available, const std::string& source) {
    if (limit <= 0) return;
    available = std::clamp<std::int64_t>(available, 0, limit);
    if (m.available < 0 || available < m.available) m.available = available;
    if (m.limit < 0 || limit < m.limit) m.limit = limit, m.limit_source = source;
  };
  bool v2 = false;
  for (const auto& dir : memory_cgroups(v2)) {
    const std::int64_t limit = cgroup_number(dir + (v2 ? "/memory.max" : "/memory.limit_in_bytes"));
    if (limit < 0) continue;
    const std::int64_t used = std::max<std::int64_t>(cgroup_number(dir + (v2 ? "/memory.current" : "/memory.usage_in_bytes")), 0);
    // Page cache the kernel reclaims before it would kill anything counts as available (as in MemAvailable).
    const std::int64_t cache = cgroup_stat(dir, v2 ? "inactive_file" : "total_inactive_file");
    tighten(limit, limit - used + cache, std::string("this process's cgroup memory limit (") + dir +
                                             (v2 ? "/memory.max)" : "/memory.limit_in_bytes)"));
  }
  rlimit as{};
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
    const auto limit = static_cast<std::int64_t>(std::min<rlim_t>(as.rlim_cur, rlim_t(kUnlimited)));
    tighten(limit, limit - std::max<std::int64_t>(own_virtual_bytes(), 0),
            "this process's address-space limit (ulimit -v)");
  }
  return m;
}

namespace {
std::int64_t host_available_bytes() {
  const auto available = host_memory().available;
  if (available < 0) throw BudgetError("memory budget 'auto': cannot read MemAvailable from /proc/meminfo");
  return available;
}
}  // namespace

MemoryBudget::MemoryBudget(std::int64_t bytes) : bytes_(bytes) {
  if (bytes <= 0) throw BudgetError("memory budget must be positive, got " + std::to_string(bytes));
}

MemoryBudget MemoryBudget::unlimited() { return MemoryBudget(kUnlimited); }

bool MemoryBudget::is_unlimited() const { return bytes_ == kUnlimited; }

std::int64_t MemoryBudget::free_bytes(const std::string& device) {
  if (device == "cpu") return host_available_bytes();
  if (device.rfind("cuda", 0) == 0) {
    int index = 0;
    if (device.size() > 5 && device[4] == ':') index = std::stoi(device.substr(5));
    return cuda_free_bytes(index);
  }
  throw BudgetError("memory budget 'auto': unknown device '" + device + "'");
}

namespace {
std::atomic<std::int64_t> g_cpu_auto_bytes{0};
std::atomic<int> g_cuda_auto_sharers{1};
}  // namespace

void MemoryBudget::set_cpu_auto_bytes(std::int64_t bytes) { g_cpu_auto_bytes = std::max<std::int64_t>(bytes, 0); }

void MemoryBudget::set_cuda_auto_sharers(int sharers) { g_cuda_auto_sharers = std::max(sharers, 1); }

std::int64_t MemoryBudget::auto_bytes(const std::string& device, std::int64_t free) {
  if (device == "cpu" && g_cpu_auto_bytes > 0) return g_cpu_auto_bytes;
  const int sharers = device.rfind("cuda", 0) == 0 ? g_cuda_auto_sharers.load() : 1;
  return static_cast<std::int64_t>(kAutoFraction * double(free) / sharers);
}

MemoryBudget MemoryBudget::parse(const std::string& text, const std::string& device,
                                 const std::string& key, std::int64_t reserved) {
  if (text == "auto") {
    // A fixed share (set_cpu_auto_bytes) was measured before anything was reserved: the
    // reservation comes out of it; otherwise out of the free memory the fraction is taken of.
    const std::int64_t r = std::max<std::int64_t>(reserved, 0);
    const std::int64_t bytes = device == "cpu" && g_cpu_auto_bytes > 0
                                   ? g_cpu_auto_bytes - r
                                   : auto_bytes(device, std::max<std::int64_t>(free_bytes(device) - r, 0));
    return MemoryBudget(std::max<std::int64_t>(bytes, 1));
  }
  const auto b = parse_bytes(text, key);
  // A budget beyond the machine's memory (or the cgroup / ulimit the process runs under) is a
  // typo or a wrong guess, not a wish: chunks sized from it would fail or be killed instead of fitting.
  if (device == "cpu") {
    const HostMemory host = host_memory();
    if (host.limit > 0 && b > static_cast<std::uint64_t>(host.limit))
      throw ConfigError("'" + key + "' = " + text + " is more than " + host.limit_source + " (" +
                        format_bytes(double(host.limit)) + ")");
  }
  if (b > static_cast<std::uint64_t>(kUnlimited)) return unlimited();
  return MemoryBudget(static_cast<std::int64_t>(b));
}

std::int64_t MemoryBudget::max_batch(std::int64_t bytes_per_item, std::int64_t fixed_bytes) const {
  if (bytes_per_item <= 0) throw BudgetError("max_batch: bytes_per_item must be positive");
  const std::int64_t room = bytes_ - std::max<std::int64_t>(fixed_bytes, 0);
  if (room < bytes_per_item)
    throw BudgetError("memory budget of " + format_bytes(double(bytes_)) + " cannot hold one item of " +
                      format_bytes(double(bytes_per_item)) + " plus " +
                      format_bytes(double(std::max<std::int64_t>(fixed_bytes, 0))) + " fixed");
  return room / bytes_per_item;
}

std::int64_t MemoryBudget::chunks(std::int64_t n_items, std::int64_t bytes_per_item,
                                  std::int64_t fixed_bytes) const {
  if (n_items <= 0) return 0;
  const std::int64_t per = max_batch(bytes_per_item, fixed_bytes);
  return (n_items + per - 1) / per;
}

MemoryBudget MemoryBudget::scaled(double fraction) const {
  if (is_unlimited()) return *this;
  return MemoryBudget(std::max<std::int64_t>(1, std::llround(fraction * double(bytes_))));
}

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (std::abs(bytes) >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  char buf[48];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", bytes, units[u]);
  return buf;
}

}  // namespace nnvmc::batching
