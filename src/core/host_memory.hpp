#pragma once
/// @file host_memory.hpp
/// How much memory the host lets this process use (torch-free: the SCF module asks too).
#include <cstdint>
#include <string>

namespace nnvmc {

/// What the host lets this process use: the smallest of the machine's memory (MemTotal /
/// MemAvailable), the memory cgroup it is charged to (v1 or v2, any ancestor: a container's or
/// a batch job's limit) and its address-space limit (ulimit -v, less what it has mapped).
struct HostMemory {
  std::int64_t available = 0;    ///< bytes it can still allocate before a limit is reached (−1: unknown)
  std::int64_t limit = 0;        ///< the tightest total limit (bytes)
  std::string limit_source;      ///< which limit that is, in words ("this machine's memory", ...)
  std::string available_source;  ///< which limit `available` comes from (may differ from limit_source)
  bool available_per_process = false;  ///< `available` is this process's own (ulimit -v), not shared with others
  bool limit_per_process = false;      ///< `limit` is this process's own (ulimit -v), not shared with others

  /// This process's part of `available` when `local_ranks` processes of the node share it: all
  /// of it when the limit is the process's own (ulimit -v), else 1/local_ranks; −1 when unknown.
  std::int64_t share(int local_ranks) const {
    if (available < 0) return -1;
    return available_per_process || local_ranks <= 1 ? available : available / local_ranks;
  }
};
/// Reads /proc/meminfo, /proc/self/cgroup with the cgroup files, and getrlimit(RLIMIT_AS).
/// Never throws: what cannot be read is left out (limit and available −1 when nothing is known).
HostMemory host_memory();

/// Bytes of anonymous memory (heap, tensors) this process holds now (/proc/self/status RssAnon,
/// else VmRSS; −1: unknown).
std::int64_t resident_bytes();

/// The peak resident memory of this process's own address space (/proc/self/status VmHWM), else
/// getrusage's ru_maxrss; −1: unknown. Not ru_maxrss first: a process started by another
/// (posix_spawn, fork) carries the parent's peak in it from before its exec, so every cell of
/// a comparison whose parent had computed a CCSD(T) reference reported the parent's 344 MiB
/// (a user audit).
std::int64_t peak_resident_bytes();

}  // namespace nnvmc
