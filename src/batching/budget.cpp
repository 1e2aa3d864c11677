#include "batching/budget.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

#include "batching/cuda_runtime.hpp"
#include "core/config.hpp"
#include "core/errors.hpp"
#include "core/log.hpp"

namespace nnvmc::batching {

namespace {
constexpr std::int64_t kUnlimited = std::numeric_limits<std::int64_t>::max();
}  // namespace

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
std::atomic<std::int64_t> g_resident_at_share{0};  ///< resident_bytes() when the share was set
std::atomic<int> g_cuda_auto_sharers{1};
std::atomic<int> g_cpu_sharers{1};
}  // namespace

void MemoryBudget::set_cpu_sharers(int sharers) { g_cpu_sharers = std::max(sharers, 1); }

void MemoryBudget::set_cpu_auto_bytes(std::int64_t bytes) {
  g_resident_at_share = std::max<std::int64_t>(resident_bytes(), 0);
  g_cpu_auto_bytes = std::max<std::int64_t>(bytes, 0);
}

void MemoryBudget::set_cuda_auto_sharers(int sharers) { g_cuda_auto_sharers = std::max(sharers, 1); }

std::int64_t MemoryBudget::auto_bytes(const std::string& device, std::int64_t free) {
  if (device == "cpu" && g_cpu_auto_bytes > 0) return g_cpu_auto_bytes;
  const int sharers = device.rfind("cuda", 0) == 0 ? g_cuda_auto_sharers.load() : 1;
  return static_cast<std::int64_t>(kAutoFraction * double(free) / sharers);
}

std::int64_t MemoryBudget::room_bytes(const std::string& device) {
  if (device == "cpu" && g_cpu_auto_bytes > 0) {  // a share, less what the process took since it was set (its model)
    const std::int64_t resident = resident_bytes();
    const std::int64_t grown = resident < 0 ? 0 : std::max<std::int64_t>(resident - g_resident_at_share, 0);
    return std::max<std::int64_t>(static_cast<std::int64_t>(static_cast<double>(g_cpu_auto_bytes) / kAutoFraction) - grown, 0);
  }
  return static_cast<std::int64_t>(static_cast<double>(auto_bytes(device, free_bytes(device))) / kAutoFraction);
}

MemoryBudget MemoryBudget::parse(const std::string& text, const std::string& device,
                                 const std::string& key, std::int64_t reserved) {
  if (text == "auto") {
    const double room = static_cast<double>(room_bytes(device)) - static_cast<double>(std::max<std::int64_t>(reserved, 0));
    return MemoryBudget(std::max<std::int64_t>(static_cast<std::int64_t>(kAutoFraction * std::max(room, 0.0)), 1));
  }
  const auto b = parse_bytes(text, key);
  // A budget beyond the machine's memory (or the cgroup / ulimit the process runs under) is a
  // typo or a wrong guess, not a wish: chunks sized from it would fail or be killed instead of fitting.
  if (device == "cpu") {
    const HostMemory host = host_memory();
    if (host.limit > 0 && b > static_cast<std::uint64_t>(host.limit))
      throw ConfigError("'" + key + "' = " + text + " is more than " + host.limit_source + " (" +
                        format_bytes(double(host.limit)) + ")");
    const int sharers = g_cpu_sharers.load();  // (ranks of this node, each with this budget)
    if (host.limit > 0 && sharers > 1 && !host.limit_per_process &&
        static_cast<double>(b) * sharers > static_cast<double>(host.limit))
      throw ConfigError(strfmt("'%s' = %s for each of the %d ranks on this node is %s in all, more than %s (%s): give "
                               "each rank at most %s, or 'auto' (each rank's share)",
                               key.c_str(), text.c_str(), sharers, format_bytes(double(b) * sharers).c_str(),
                               host.limit_source.c_str(), format_bytes(double(host.limit)).c_str(),
                               format_bytes(double(host.limit) / sharers).c_str()));
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

namespace {
std::string formatted_bytes(double bytes, bool up) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (std::abs(bytes) >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  const double digits = u == 0 ? 1 : 100;
  if (up) bytes = std::ceil(bytes * digits - 1e-9) / digits;  // (1e-9: a value already exact stays)
  char buf[48];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", bytes, units[u]);
  return buf;
}
}  // namespace

std::string format_bytes(double bytes) { return formatted_bytes(bytes, false); }
std::string format_bytes_up(double bytes) { return formatted_bytes(bytes, true); }

}  // namespace nnvmc::batching
