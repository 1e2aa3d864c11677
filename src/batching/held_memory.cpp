#include "batching/held_memory.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <utility>

namespace nnvmc::batching {
namespace {
std::mutex ledger_mutex;
std::map<std::pair<int, const void*>, std::int64_t>& ledger() {
  static std::map<std::pair<int, const void*>, std::int64_t> held;
  return held;
}
}  // namespace

void hold_memory(int device, const void* holder, std::int64_t bytes) {
  const std::lock_guard<std::mutex> lock(ledger_mutex);
  ledger()[{device, holder}] = std::max<std::int64_t>(bytes, 0);
}

void release_memory(int device, const void* holder) {
  const std::lock_guard<std::mutex> lock(ledger_mutex);
  ledger().erase({device, holder});
}

std::int64_t held_bytes(int device) {
  const std::lock_guard<std::mutex> lock(ledger_mutex);
  std::int64_t total = 0;
  for (const auto& [key, bytes] : ledger())
    if (key.first == device) total += bytes;
  return total;
}

}  // namespace nnvmc::batching
