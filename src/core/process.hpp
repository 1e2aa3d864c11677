#pragma once
/// @file process.hpp
/// Child processes (POSIX): start one with its output in a log file, wait for it, and run the
/// project's Python plotting scripts. Torch-free.
#include <string>
#include <vector>

#include <sys/types.h>

namespace nnvmc {

/// How a child process ended.
struct ExitStatus {
  int code = -1;    ///< exit code (−1 when killed by a signal)
  int signal = 0;   ///< the signal that killed it (0 if it exited)
  bool ok() const { return code == 0; }
  std::string describe() const;  ///< "exit code 1" / "killed by signal 9 (Killed)"
};

/// Starts `argv[0]` (searched in PATH when it has no '/') with `argv`, stdout and stderr appended
/// to `log_path` (or inherited when empty), and `env` ("NAME=value") added to this process's
/// environment, without the variables whose names start with one of `unset_prefixes` (e.g. a
/// child of an mpirun rank without OMPI_/PMIX_: it then runs as a process of its own).
/// @throws Error when it cannot be started.
pid_t spawn_process(const std::vector<std::string>& argv, const std::string& log_path,
                    const std::vector<std::string>& env = {},
                    const std::vector<std::string>& unset_prefixes = {});

/// Waits for `pid` (pid = −1: any child). Returns the pid that ended (0 when interrupted by a
/// signal before any child ended), filling `status`.
pid_t wait_process(pid_t pid, ExitStatus& status);

/// The 1-minute load average from /proc/loadavg (NaN when it cannot be read).
double load_average_1min();

/// Tasks runnable now, this process's running threads included (/proc/loadavg's fourth field;
/// -1 when it cannot be read).
int runnable_tasks();

/// The CPUs this process may run on (its affinity mask: a batch job's or a taskset's share; the
/// hardware's count when the mask cannot be read; at least 1).
int available_cpus();

/// This executable's path (/proc/self/exe).
std::string self_executable();

/// Directory of the shipped scripts: $NNVMC_SCRIPTS, else scripts/ of the source tree.
std::string default_scripts_dir();

/// Runs `python3 <scripts dir>/<script> args...` with output appended to `log_path`.
/// @return true when it ran and succeeded; false (and `why`) when python3 or a module is
/// missing or the script failed.
bool run_python_script(const std::string& script, const std::vector<std::string>& args,
                       const std::string& log_path, std::string& why);

}  // namespace nnvmc
