#include "core/process.hpp"

#include "core/data_paths.hpp"

#include <fcntl.h>
#include <sched.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <algorithm>
#include <limits>
#include <thread>
#include <map>

#include "core/errors.hpp"

extern char** environ;

namespace nnvmc {

std::string ExitStatus::describe() const {
  if (signal != 0) return "killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
  return "exit code " + std::to_string(code);
}

pid_t spawn_process(const std::vector<std::string>& argv, const std::string& log_path,
                    const std::vector<std::string>& env, const std::vector<std::string>& unset_prefixes) {
  if (argv.empty()) throw Error("spawn_process: empty command");
  // Environment: ours, with `env` entries replacing same-named ones.
  std::map<std::string, std::string> vars;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv(*e);
    const std::string name = kv.substr(0, kv.find('='));
    bool unset = false;
    for (const auto& prefix : unset_prefixes) unset = unset || name.rfind(prefix, 0) == 0;
    if (!unset) vars[name] = kv;
  }
  for (const auto& kv : env) vars[kv.substr(0, kv.find('='))] = kv;
  std::vector<std::string> env_strings;
  for (const auto& [k, kv] : vars) env_strings.push_back(kv);
  std::vector<char*> envp, args;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);

  // The log file is opened here first: posix_spawn reports the child's failed open as its own
  // ENOENT, which read as "cannot start 'nnvmc'" (a user audit: a cell directory missing on one rank)
  if (!log_path.empty()) {
    const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0) throw Error("cannot open the log file '" + log_path + "' of '" + argv[0] + "': " + std::strerror(errno));
    ::close(fd);
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (!log_path.empty()) {
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  }
  pid_t pid = 0;
  const int rc = argv[0].find('/') == std::string::npos
                     ? posix_spawnp(&pid, argv[0].c_str(), &actions, nullptr, args.data(), envp.data())
                     : posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw Error("cannot start '" + argv[0] + "': " + std::strerror(rc));
  return pid;
}

pid_t wait_process(pid_t pid, ExitStatus& status) {
  int wstatus = 0;
  const pid_t done = waitpid(pid, &wstatus, 0);
  if (done < 0) {
    if (errno == EINTR) return 0;
    throw Error(std::string("waiting for a child process: ") + std::strerror(errno));
  }
  status = ExitStatus{};
  if (WIFEXITED(wstatus)) status.code = WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus)) status.signal = WTERMSIG(wstatus);
  return done;
}

std::string self_executable() {
  std::error_code ec;
  const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw Error("cannot find this executable (/proc/self/exe): " + ec.message());
  return p.string();
}

std::string default_scripts_dir() {
  return scripts_data_dir();
}

bool run_python_script(const std::string& script, const std::vector<std::string>& args,
                       const std::string& log_path, std::string& why) {
  const std::string path = default_scripts_dir() + "/" + script;
  if (!std::filesystem::exists(path)) {
    why = "no " + path;
    return false;
  }
  std::vector<std::string> argv{"python3", path};
  argv.insert(argv.end(), args.begin(), args.end());
  pid_t pid = 0;
  try {
    pid = spawn_process(argv, log_path);
  } catch (const Error& e) {
    why = e.what();
    return false;
  }
  ExitStatus st;
  while (wait_process(pid, st) == 0) {
  }
  if (st.ok()) return true;
  why = "python3 " + script + " failed (" + st.describe() + "; see " + log_path +
        "; it needs python3-matplotlib and python3-h5py)";
  return false;
}

int runnable_tasks() {
  std::ifstream in("/proc/loadavg");
  double a1 = 0, a5 = 0, a15 = 0;
  int running = -1;
  char slash = 0;
  if (!(in >> a1 >> a5 >> a15 >> running >> slash) || slash != '/') return -1;
  return running;
}

int available_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return std::max(1u, std::thread::hardware_concurrency());
}

double load_average_1min() {
  std::ifstream in("/proc/loadavg");
  double a = std::numeric_limits<double>::quiet_NaN();
  if (!(in >> a)) return std::numeric_limits<double>::quiet_NaN();
  return a;
}

}  // namespace nnvmc
