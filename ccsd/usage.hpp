#pragma once
/// @file usage.hpp
/// Resource usage samples (wall, user and system CPU time, minor page faults) for profiling
/// CCSD iterations and terms. Torch-free, header-only.
#include <sys/resource.h>

#include <chrono>
#include <cstdint>

namespace nnvmc::ccsd {

/// Wall time, process CPU time (user, system) and minor page faults; differences of two
/// samples give the usage of what ran in between (all threads of the process).
struct Usage {
  double wall = 0;                 ///< seconds (steady clock)
  double user = 0;                 ///< user CPU seconds
  double sys = 0;                  ///< system (kernel) CPU seconds
  std::int64_t minor_faults = 0;   ///< page faults served without I/O (first touch of fresh pages)

  double cpu() const { return user + sys; }  ///< user + system seconds

  /// The process's usage now.
  static Usage now() {
    Usage u;
    u.wall = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    rusage r{};
    getrusage(RUSAGE_SELF, &r);
    u.user = double(r.ru_utime.tv_sec) + 1e-6 * double(r.ru_utime.tv_usec);
    u.sys = double(r.ru_stime.tv_sec) + 1e-6 * double(r.ru_stime.tv_usec);
    u.minor_faults = std::int64_t(r.ru_minflt);
    return u;
  }
  Usage operator-(const Usage& o) const {
    return {wall - o.wall, user - o.user, sys - o.sys, minor_faults - o.minor_faults};
  }
  Usage& operator+=(const Usage& o) {
    wall += o.wall, user += o.user, sys += o.sys, minor_faults += o.minor_faults;
    return *this;
  }
  Usage scaled(double f) const {
    return {wall * f, user * f, sys * f, std::int64_t(double(minor_faults) * f)};
  }
};

}  // namespace nnvmc::ccsd
