/// DeviceGraph: capture/replay through the nnvmc_cuda_graph plugin (opened at run time, so a
/// CPU-only process never loads libtorch_cuda), eager fallback, CPU emulation for tests.
#include "parallel/device_graph.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <map>
#include <mutex>

#include "batching/budget.hpp"
#include "batching/held_memory.hpp"
#include "batching/peak_memory.hpp"
#include "core/errors.hpp"
#include "core/log.hpp"
#include "parallel/cuda_graph_plugin.h"
#include "torch/version.h"

namespace nnvmc::parallel {
namespace {

/// The plugin's entry points (cuda_graph_plugin.h), resolved once.
struct PluginApi {
  decltype(&nnvmc_cuda_graph_torch_version) torch_version = nullptr;
  decltype(&nnvmc_cuda_graph_new) create = nullptr;
  decltype(&nnvmc_cuda_graph_delete) destroy = nullptr;
  decltype(&nnvmc_cuda_graph_warmup) warmup = nullptr;
  decltype(&nnvmc_cuda_graph_capture) capture = nullptr;
  decltype(&nnvmc_cuda_graph_replay) replay = nullptr;
  decltype(&nnvmc_cuda_graph_pool_bytes) pool_bytes = nullptr;
};

/// Folders searched for the plugin: $NNVMC_PLUGIN_DIR, the executable's folder, ../lib/nnvmc
/// beside it (an installed nnvmc), the build tree's folder.
std::vector<std::string> plugin_dirs() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("NNVMC_PLUGIN_DIR")) dirs.emplace_back(env);
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    dirs.push_back(exe.parent_path().string());
    dirs.push_back((exe.parent_path().parent_path() / "lib" / "nnvmc").string());
  }
#ifdef NNVMC_PLUGIN_BUILD_DIR
  dirs.emplace_back(NNVMC_PLUGIN_BUILD_DIR);
#endif
  return dirs;
}

const PluginApi* plugin(std::string* why) {
  static std::once_flag once;
  static PluginApi api;
  static std::string error;
  std::call_once(once, [] {
    void* lib = nullptr;
    std::string tried;
    for (const auto& dir : plugin_dirs()) {
      const auto path = dir + "/libnnvmc_cuda_graph.so";
      if (!std::filesystem::exists(path)) continue;
      lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (lib != nullptr) break;
      tried += std::string(tried.empty() ? "" : "; ") + dlerror();
    }
    if (lib == nullptr) {
      error = tried.empty() ? "libnnvmc_cuda_graph.so not found (built with NNVMC_WITH_CUDA; set NNVMC_PLUGIN_DIR)"
                            : tried;
      return;
    }
    auto sym = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      if (fn == nullptr && error.empty()) error = std::string("missing symbol ") + name;
    };
    sym(api.torch_version, "nnvmc_cuda_graph_torch_version");
    sym(api.create, "nnvmc_cuda_graph_new");
    sym(api.destroy, "nnvmc_cuda_graph_delete");
    sym(api.warmup, "nnvmc_cuda_graph_warmup");
    sym(api.capture, "nnvmc_cuda_graph_capture");
    sym(api.replay, "nnvmc_cuda_graph_replay");
    sym(api.pool_bytes, "nnvmc_cuda_graph_pool_bytes");
    if (error.empty() && std::string(api.torch_version()) != TORCH_VERSION)
      error = std::string("libnnvmc_cuda_graph.so was built against torch ") + api.torch_version() + ", nnvmc against " +
              TORCH_VERSION;
  });
  if (!error.empty()) {
    if (why) *why = error;
    return nullptr;
  }
  return &api;
}

/// Calls the body from the plugin; an exception becomes a return code and is kept (nothing
/// unwinds through the plugin's C interface).
struct BodyCall {
  const std::function<void()>* body;
  std::exception_ptr error;
  static int call(void* self) {
    auto* c = static_cast<BodyCall*>(self);
    try {
      (*c->body)();
      return 0;
    } catch (...) {
      c->error = std::current_exception();
    }
    return 1;
  }
  std::string message() const {
    try {
      if (error) std::rethrow_exception(error);
    } catch (const std::exception& e) {
      return e.what();
    } catch (...) {
      return "unknown exception";
    }
    return "";
  }
};

/// The first line of a message (c10 errors append a backtrace).
std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

/// The graph pool of a device as its DeviceGraphs account for it (device_graph.hpp).
struct PoolAccount {
  int graphs = 0;          ///< graphs using the pool
  std::int64_t bytes = 0;  ///< what it holds
};
std::mutex pool_mutex;
std::map<int, PoolAccount>& pool_accounts() {
  static std::map<int, PoolAccount> accounts;
  return accounts;
}
/// The held-memory ledger's key for the graph pools (one entry per device).
const char kPoolHolder = 0;

/// Ledger device: the CUDA index, or −1 for the CPU (emulated graphs).
int ledger_device(c10::Device d) { return d.is_cuda() ? (d.has_index() ? d.index() : 0) : -1; }

/// Sets device `dev`'s pool to `bytes` in the account and the ledger (caller holds pool_mutex).
void set_pool_locked(int dev, std::int64_t bytes) {
  pool_accounts()[dev].bytes = bytes;
  batching::hold_memory(dev, &kPoolHolder, bytes);
}

}  // namespace

struct DeviceGraph::Captured {
  void* graph = nullptr;       ///< the plugin's graph (captured mode), with its side stream
  bool ready = false;          ///< captured: replays from now on
  std::function<void()> kept;  ///< the body of the capturing call (emulated mode)
  ~Captured() {
    if (graph != nullptr) plugin(nullptr)->destroy(graph);
  }
};

namespace {
thread_local int graph_body_depth = 0;

/// Marks the calling thread as running a fixed graph body while it lives.
struct GraphBodyScope {
  GraphBodyScope() { ++graph_body_depth; }
  ~GraphBodyScope() { --graph_body_depth; }
  GraphBodyScope(const GraphBodyScope&) = delete;
  GraphBodyScope& operator=(const GraphBodyScope&) = delete;
};
}  // namespace

bool in_graph_body() { return graph_body_depth > 0; }

bool cuda_graphs_available(std::string* why) { return plugin(why) != nullptr; }

DeviceGraph::DeviceGraph(GraphMode mode, c10::Device device, std::string what)
    : mode_(mode), device_(device), what_(std::move(what)) {
  if (mode_ == GraphMode::captured && !device_.is_cuda()) mode_ = GraphMode::eager;
  if (mode_ == GraphMode::captured) {
    std::string why;
    if (!cuda_graphs_available(&why)) {
      failure_ = why;
      mode_ = GraphMode::eager;
      log::warn("CUDA graphs for " + what_ + " are not available (" + why + "): it runs without them");
    }
  }
}

DeviceGraph::~DeviceGraph() { leave_pool(); }

std::int64_t DeviceGraph::pool_bytes(c10::Device device) {
  const std::lock_guard<std::mutex> lock(pool_mutex);
  const auto it = pool_accounts().find(ledger_device(device));
  return it == pool_accounts().end() ? 0 : it->second.bytes;
}

void DeviceGraph::warm_up(const std::function<void()>& call) {
  const int dev = ledger_device(device_);
  {
    batching::PeakMemoryScope scope(dev);
    call();
    warmup_peak_ = scope.peak_bytes();
  }
  const std::lock_guard<std::mutex> lock(pool_mutex);
  join_pool_locked(dev);
  set_pool_locked(dev, std::max(pool_accounts()[dev].bytes, warmup_peak_));
}

void DeviceGraph::join_pool_locked(int dev) {
  if (!in_pool_) ++pool_accounts()[dev].graphs;
  in_pool_ = true;
}

void DeviceGraph::leave_pool() {
  if (!in_pool_) return;
  in_pool_ = false;
  const int dev = ledger_device(device_);
  const std::lock_guard<std::mutex> lock(pool_mutex);
  auto& pool = pool_accounts()[dev];
  if (--pool.graphs > 0) return;
  pool = PoolAccount{};
  batching::release_memory(dev, &kPoolHolder);
}

void DeviceGraph::give_up(const std::string& why) {
  failure_ = first_line(why);
  mode_ = GraphMode::eager;
  graph_.reset();
  leave_pool();
  log::warn("CUDA graph of " + what_ + " failed (" + failure_ + "): it runs without a graph from now on");
}

void DeviceGraph::run(const GraphKey& key, const std::function<void()>& body) {
  if (mode_ == GraphMode::eager) return body();
  if (graph_ && graph_->ready && key == key_) {
    ++replays_;
    if (mode_ == GraphMode::emulated) {
      const GraphBodyScope fixed;
      return graph_->kept();
    }
    char message[512] = {0};
    if (plugin(nullptr)->replay(graph_->graph, message, sizeof message) != 0)
      throw Error("CUDA graph replay of " + what_ + " failed: " + first_line(message));
    return;
  }
  if (!graph_ || key != key_) {  // a new key: an eager warm-up call first
    key_ = key;
    graph_ = std::make_unique<Captured>();
    try {
      if (mode_ == GraphMode::emulated) return warm_up(body);
      char message[512] = {0};
      graph_->graph = plugin(nullptr)->create(device_.has_index() ? device_.index() : -1, message, sizeof message);
      if (graph_->graph == nullptr) {
        give_up(message);
        return body();
      }
      BodyCall call{&body, nullptr};
      int rc = 0;
      warm_up([&] { rc = plugin(nullptr)->warmup(graph_->graph, &BodyCall::call, &call, message, sizeof message); });
      if (rc == 1) std::rethrow_exception(call.error);  // the body's own error (the work itself failed)
      if (rc != 0) {
        give_up(message);
        return body();
      }
      return;
    } catch (...) {  // the next call warms up again
      graph_.reset();
      key_.clear();
      throw;
    }
  }
  capture(body);
  if (mode_ == GraphMode::eager) return body();  // capture failed: nothing ran
  run(key, body);
}

void DeviceGraph::capture(const std::function<void()>& body) {
  if (mode_ == GraphMode::emulated) {
    graph_->kept = body;
  } else {
    BodyCall call{&body, nullptr};
    char message[512] = {0};
    int rc = 0;
    {
      const GraphBodyScope fixed;
      rc = plugin(nullptr)->capture(graph_->graph, &BodyCall::call, &call, message, sizeof message);
    }
    if (rc != 0) return give_up(call.error ? call.message() : std::string(message));
    const int dev = ledger_device(device_);
    const std::int64_t measured = plugin(nullptr)->pool_bytes(dev);
    std::int64_t pool = 0;
    {
      const std::lock_guard<std::mutex> lock(pool_mutex);
      join_pool_locked(dev);
      // The pool's segments (rounded up by the allocator) or the warm-up estimates, whichever is
      // larger: the account never shrinks while graphs use the pool.
      pool = std::max(measured, pool_accounts()[dev].bytes);
      set_pool_locked(dev, pool);
    }
    log::info("captured " + what_ + " as a CUDA graph (replayed with one launch); the device's graph pool holds " +
              batching::format_bytes(double(measured)) + " (accounted " + batching::format_bytes(double(pool)) +
              ", left out of run.memory_budget)");
  }
  graph_->ready = true;
  ++captures_;
}

}  // namespace nnvmc::parallel
