#include "io/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/errors.hpp"

namespace nnvmc::io {

void write_file_synced(const std::string& path, const void* data, std::size_t bytes) {
  const auto error = [&path](const char* what) {
    throw WriteError(path + ": cannot " + what + ": " + std::strerror(errno));
  };
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);  // less the umask
  if (fd < 0) error("create");
  std::size_t done = 0;
  while (done < bytes) {
    const ssize_t n = ::write(fd, static_cast<const char*>(data) + done, bytes - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = n == 0 ? EIO : errno;
      ::close(fd);
      errno = e;
      error("write");
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const int e = errno;
    ::close(fd);
    errno = e;
    error("write (fsync)");
  }
  if (::close(fd) != 0) error("write (close)");
}

void rename_into_place(const std::string& tmp, const std::string& path) {
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw WriteError(path + ": cannot rename " + tmp + " into place: " + ec.message());
  // The rename is in the directory: synced too, so that after a power loss the name holds the
  // new file (the file's own bytes were synced before). Best effort: a file system that cannot
  // sync a directory (EINVAL) has done the rename all the same.
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  const int fd = ::open(parent.empty() ? "." : parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    (void)::fsync(fd);
    ::close(fd);
  }
}

void remove_quietly(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove(path, ec);
}

void write_bytes_atomically(const std::string& path, const void* data, std::size_t bytes) {
  const std::string tmp = path + ".tmp";
  try {
    write_file_synced(tmp, data, bytes);
    rename_into_place(tmp, path);
  } catch (...) {
    remove_quietly(tmp);
    throw;
  }
}

void write_text_atomically(const std::string& path, const std::string& text) {
  write_bytes_atomically(path, text.data(), text.size());
}

}  // namespace nnvmc::io
