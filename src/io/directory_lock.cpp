#include "io/directory_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "core/errors.hpp"
#include "core/log.hpp"

namespace nnvmc::io {

namespace {
/// The pid the lock's holder wrote in its lock file ("" when none).
std::string written_pid(int fd) {
  char buf[32] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  std::string pid = n > 0 ? std::string(buf, std::size_t(n)) : std::string();
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  return pid;
}
}  // namespace

DirectoryLock::DirectoryLock(const std::string& dir, const std::string& key) {
  const std::string path = dir + "/" + kLockFileName;
  // A lock on a file that is no longer at `path` (a refused start removes the lock file it made
  // while holding it) locks nothing: the file at the path is opened and locked again.
  for (int reopened = 0;; ++reopened) {
    if (lock_file(path, dir, key)) return;  // (no locks on this file system: fd_ is −1)
    struct stat held {}, now {};
    if (::fstat(fd_, &held) == 0 && ::stat(path.c_str(), &now) == 0 && held.st_dev == now.st_dev &&
        held.st_ino == now.st_ino)
      break;
    ::close(fd_);
    fd_ = -1;
    if (reopened >= 10) throw WriteError(path + ": cannot lock: the lock file keeps being removed or replaced");
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) == 0) (void)!::pwrite(fd_, pid.data(), pid.size(), 0);  // informative only
}

bool DirectoryLock::lock_file(const std::string& path, const std::string& dir, const std::string& key) {
  // 0666 less the umask, as for every file the run writes; read-only suffices for flock (the pid
  // written for the message is informative), e.g. in a directory shared by a group
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  created_ = fd_ >= 0;
  if (fd_ < 0 && errno == EEXIST) fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  const int create_error = errno;
  if (fd_ < 0) fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  // (the reason is the creation's: "permission denied", not the read-only retry's "no such file")
  if (fd_ < 0) {
    const std::string why = key + ": cannot write to '" + dir + "': " + std::strerror(create_error);
    const int e = create_error;
    if (e == EACCES || e == EPERM || e == EROFS || e == ENOENT || e == ENOTDIR) throw InputError(why);  // the user's choice
    throw WriteError(why);  // the machine's state: disk full, I/O error, too many open files
  }
  // (a few tries: `compare --list` probes locks for a moment, io::lock_held, and a start at that
  // moment is not "in use")
  int locked = ::flock(fd_, LOCK_EX | LOCK_NB);
  for (int attempt = 0; locked != 0 && errno == EWOULDBLOCK && attempt < 5; ++attempt) {
    ::usleep(20000);
    locked = ::flock(fd_, LOCK_EX | LOCK_NB);
  }
  if (locked == 0) return false;
  const int e = errno;
  if (e == ENOSYS || e == ENOLCK || e == EOPNOTSUPP) {  // a file system without flock (Lustre noflock, NFS without lockd)
    ::close(fd_);
    fd_ = -1;
    log::warn(key + ": '" + dir + "' does not support file locks (" + std::strerror(e) +
              "); running without the lock that keeps two nnvmc processes out of one directory");
    return true;
  }
  const std::string holder = written_pid(fd_);
  ::close(fd_);
  fd_ = -1;
  if (e != EWOULDBLOCK) throw WriteError(path + ": cannot lock: " + std::strerror(e));
  throw InputError(key + ": '" + dir + "' is in use by another nnvmc process" +
                   (holder.empty() ? std::string() : " (pid " + holder + ")") +
                   "; wait for it to finish or choose another " + key);
}

DirectoryLock::~DirectoryLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the flock
}

DirectoryLock::DirectoryLock(DirectoryLock&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), created_(std::exchange(other.created_, false)) {}

DirectoryLock& DirectoryLock::operator=(DirectoryLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    created_ = std::exchange(other.created_, false);
  }
  return *this;
}

bool lock_held(const std::string& dir, std::string* holder) {
  const int fd = ::open((dir + "/" + kLockFileName).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool held = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  if (held && holder != nullptr) *holder = written_pid(fd);
  ::close(fd);  // (releases the shared lock taken when it was free)
  return held;
}

}  // namespace nnvmc::io
