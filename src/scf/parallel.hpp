#pragma once
/// @file parallel.hpp
/// A minimal thread pool-free parallel loop (std::thread) used by the integral code.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace nnvmc::scf {

/// Task t of a loop over the pairs i ≥ j in packed lower-triangular order → (i, j).
inline std::pair<std::size_t, std::size_t> packed_pair(std::size_t t) {
  std::size_t i = static_cast<std::size_t>((std::sqrt(8.0 * static_cast<double>(t) + 1) - 1) / 2);
  while (i * (i + 1) / 2 > t) --i;
  while ((i + 1) * (i + 2) / 2 <= t) ++i;
  return {i, t - i * (i + 1) / 2};
}

/// Number of threads to use: `requested` if positive, else the hardware concurrency (≥ 1).
inline int resolve_threads(int requested) {
  if (requested > 0) return requested;
  return std::max(1u, std::thread::hardware_concurrency());
}

/// Calls fn(task, thread_index) for task = 0 … n_tasks−1 on `threads` threads, handing out
/// tasks dynamically. The first exception thrown by any call is rethrown after all threads
/// have stopped.
template <class Fn>
void parallel_for(std::size_t n_tasks, int threads, Fn&& fn) {
  const int n_threads = static_cast<int>(std::min<std::size_t>(std::max(threads, 1), std::max<std::size_t>(n_tasks, 1)));
  std::atomic<std::size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto worker = [&](int thread_index) {
    try {
      for (std::size_t t = next++; t < n_tasks; t = next++) fn(t, thread_index);
    } catch (...) {
      std::lock_guard lock(error_mutex);
      if (!error) error = std::current_exception();
      next = n_tasks;  // stop handing out work
    }
  };
  if (n_threads == 1) {
    worker(0);
  } else {
    std::vector<std::thread> pool;
    for (int i = 1; i < n_threads; ++i) pool.emplace_back(worker, i);
    worker(0);
    for (auto& t : pool) t.join();
  }
  if (error) std::rethrow_exception(error);
}

/// Like parallel_for, but task t always runs on thread t mod n_threads, in increasing order:
/// per-thread accumulations sum the same terms in the same order on every call, so results
/// are bit-reproducible for a given thread count (a resumed run equals an uninterrupted one).
template <class Fn>
void parallel_for_static(std::size_t n_tasks, int threads, Fn&& fn) {
  const int n_threads = static_cast<int>(std::min<std::size_t>(std::max(threads, 1), std::max<std::size_t>(n_tasks, 1)));
  std::atomic<bool> failed{false};
  parallel_for(static_cast<std::size_t>(n_threads), n_threads, [&](std::size_t thread_index, int) {
    try {
      for (std::size_t t = thread_index; t < n_tasks && !failed; t += static_cast<std::size_t>(n_threads))
        fn(t, static_cast<int>(thread_index));
    } catch (...) {
      failed = true;
      throw;
    }
  });
}

}  // namespace nnvmc::scf
