#pragma once
/// @file directory_lock.hpp
/// An advisory lock on an output directory (flock on DIR/.nnvmc.lock), held for the lock's
/// lifetime, so two nnvmc processes never write one run or comparison at once. The kernel
/// releases it when the process ends, however it ends (no stale locks after kill -9).
#include <string>

namespace nnvmc::io {

/// Holds the lock of a directory (which must exist).
/// Name of the lock file in a locked directory.
inline constexpr const char* kLockFileName = ".nnvmc.lock";

class DirectoryLock {
 public:
  DirectoryLock() = default;
  /// Takes the lock of `dir` without waiting (beyond ~0.1 s of retries). @throws InputError naming `key`, the directory and
  /// the holder's pid when another process holds it, or naming `key` and the reason when the
  /// user may not write the directory (permissions, a read-only file system); WriteError when
  /// the lock file cannot be made for another reason (disk full, I/O) or not locked.
  DirectoryLock(const std::string& dir, const std::string& key);
  ~DirectoryLock();
  DirectoryLock(DirectoryLock&& other) noexcept;
  DirectoryLock& operator=(DirectoryLock&& other) noexcept;
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;

  /// Whether this lock created the lock file it holds (a start refused early removes it again).
  bool created() const { return created_; }

 private:
  /// Opens `path` into fd_ and locks it (a few tries). @return true when the file system has no
  /// locks (fd_ −1: run without). @throws as the constructor
  bool lock_file(const std::string& path, const std::string& dir, const std::string& key);
  int fd_ = -1;
  bool created_ = false;
};

/// Whether another process holds the lock of `dir`, with the pid it wrote in `holder` ("" when
/// unknown). A probe for listings (`compare --list`): it takes a shared lock and releases it at
/// once when free (a DirectoryLock taken at that moment tries again). False when `dir` has no
/// lock file or the file system has no locks.
bool lock_held(const std::string& dir, std::string* holder = nullptr);

}  // namespace nnvmc::io
