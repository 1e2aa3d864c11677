#include "core/host_memory.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>
#include <vector>

namespace nnvmc {

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

/// A /proc/self/status entry ("VmSize:", "VmRSS:") in bytes, or −1 when it cannot be read.
std::int64_t own_status_bytes(const std::string& entry) {
  std::ifstream in("/proc/self/status");
  std::string key;
  while (in >> key) {
    if (key == entry) {
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
  m.limit_source = m.available_source = "this machine's memory";
  const auto tighten = [&m](std::int64_t limit, std::int64_t available, const std::string& source, bool per_process) {
    if (limit <= 0) return;
    available = std::clamp<std::int64_t>(available, 0, limit);
    if (m.available < 0 || available < m.available)
      m.available = available, m.available_source = source, m.available_per_process = per_process;
    if (m.limit < 0 || limit < m.limit) m.limit = limit, m.limit_source = source, m.limit_per_process = per_process;
  };
  bool v2 = false;
  for (const auto& dir : memory_cgroups(v2)) {
    const std::int64_t limit = cgroup_number(dir + (v2 ? "/memory.max" : "/memory.limit_in_bytes"));
    if (limit < 0) continue;
    const std::int64_t used = std::max<std::int64_t>(cgroup_number(dir + (v2 ? "/memory.current" : "/memory.usage_in_bytes")), 0);
    // Page cache the kernel reclaims before it would kill anything counts as available (as in MemAvailable).
    const std::int64_t cache = cgroup_stat(dir, v2 ? "inactive_file" : "total_inactive_file");
    tighten(limit, limit - used + cache, std::string("this process's cgroup memory limit (") + dir +
                                             (v2 ? "/memory.max)" : "/memory.limit_in_bytes)"),
            false);
  }
  rlimit as{};
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
    const auto limit = static_cast<std::int64_t>(std::min<rlim_t>(as.rlim_cur, rlim_t(kUnlimited)));
    tighten(limit, limit - std::max<std::int64_t>(own_status_bytes("VmSize:"), 0),
            "this process's address-space limit (ulimit -v)", true);
  }
  return m;
}

std::int64_t resident_bytes() {
  // Anonymous pages only (heap, tensors): the library code a process pages in as it runs is
  // file-backed, and the kernel would drop it before it failed an allocation.
  const std::int64_t anonymous = own_status_bytes("RssAnon:");
  return anonymous >= 0 ? anonymous : own_status_bytes("VmRSS:");
}

std::int64_t peak_resident_bytes() {
  if (const std::int64_t own = own_status_bytes("VmHWM:"); own >= 0) return own;
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return -1;
  return static_cast<std::int64_t>(usage.ru_maxrss) * 1024;
}

}  // namespace nnvmc
