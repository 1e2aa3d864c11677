#include "batching/budget.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

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

std::int64_t host_available_bytes() {
  const std::int64_t b = meminfo_bytes("MemAvailable:");
  if (b < 0) throw BudgetError("memory budget 'auto': cannot read MemAvailable from /proc/meminfo");
  return b;
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

MemoryBudget MemoryBudget::parse(const std::string& text, const std::string& device,
                                 const std::string& key) {
  if (text == "auto")
    return MemoryBudget(static_cast<std::int64_t>(kAutoFraction * free_bytes(device)));
  const auto b = parse_bytes(text, key);
  // A budget beyond the machine's memory is a typo, not a wish: chunks sized from it would fail
  // (or be killed) instead of fitting.
  const std::int64_t total = device == "cpu" ? meminfo_bytes("MemTotal:") : -1;
  if (total > 0 && b > static_cast<std::uint64_t>(total))
    throw ConfigError("'" + key + "' = " + text + " is more than this machine's memory (" +
                      format_bytes(double(total)) + ")");
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
