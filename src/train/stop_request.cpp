#include "train/stop_request.hpp"

#include <atomic>
#include <filesystem>
#include <mutex>
#include <utility>

#include "core/log.hpp"

namespace nnvmc {
namespace {
std::atomic<bool> g_stop{false};
std::atomic<bool> g_by_file{false};  // the stop came from the stop file (for the message)
std::mutex g_file_mutex;
std::string g_file;  // the watched stop file ("" none), under g_file_mutex
}  // namespace

StopFileWatch::StopFileWatch(std::string path) : path_(std::move(path)) {
  const std::lock_guard<std::mutex> lock(g_file_mutex);
  g_file = path_;
}

StopFileWatch::StopFileWatch(StopFileWatch&& other) noexcept : path_(std::exchange(other.path_, std::string())) {}

StopFileWatch& StopFileWatch::operator=(StopFileWatch&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::exchange(other.path_, std::string());
  }
  return *this;
}

StopFileWatch::~StopFileWatch() { release(); }

void StopFileWatch::release() noexcept {
  if (path_.empty()) return;
  {
    const std::lock_guard<std::mutex> lock(g_file_mutex);
    if (g_file == path_) g_file.clear();
  }
  std::error_code ec;
  if (std::filesystem::exists(path_, ec) && std::filesystem::remove(path_, ec))
    log::warn(path_ + " was made as the run ended, and is removed (it would stop the next resume at once)");
  path_.clear();
}

bool take_stop_file() {
  std::string path;
  {
    const std::lock_guard<std::mutex> lock(g_file_mutex);
    path = g_file;
  }
  std::error_code ec;
  if (path.empty() || !std::filesystem::exists(path, ec)) return false;
  std::filesystem::remove(path, ec);
  log::info(path + " asks the run to stop (the file is removed)");
  g_by_file = true;
  g_stop = true;
  return true;
}

bool stop_requested() { return g_stop; }
void set_stop_requested(bool stop) {
  g_stop = stop;
  if (!stop) g_by_file = false;
}

void throw_if_stop_requested(const std::string& stage) {
  if (g_stop) throw Interrupted(std::string(g_by_file ? "stopped by the STOP file" : "stopped by a signal") + " during " + stage);
}

}  // namespace nnvmc
