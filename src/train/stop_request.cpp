#include "train/stop_request.hpp"

#include <atomic>

namespace nnvmc {
namespace {
std::atomic<bool> g_stop{false};
}  // namespace

bool stop_requested() { return g_stop; }
void set_stop_requested(bool stop) { g_stop = stop; }

void throw_if_stop_requested(const std::string& stage) {
  if (g_stop) throw Interrupted("stopped by a signal during " + stage);
}

}  // namespace nnvmc
