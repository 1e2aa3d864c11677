#pragma once
/// @file hdf5_file.hpp
/// Minimal RAII access to HDF5 files (C API): named n-d arrays of double/float/int64/uint8,
/// string attributes, and growable 1-d columns for per-iteration results. Torch-free.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/atomic_file.hpp"

namespace nnvmc::io {

/// Element type of a stored array.
enum class DType { f64, f32, i64, u8 };

/// An n-d array in memory (row-major), as read from or written to HDF5.
struct Array {
  DType dtype = DType::f64;        ///< element type
  std::vector<std::int64_t> shape;  ///< dimensions (empty = scalar)
  std::vector<unsigned char> bytes;  ///< raw row-major data
  std::int64_t numel() const;       ///< product of shape
  template <class T> const T* as() const { return reinterpret_cast<const T*>(bytes.data()); }
};

/// Builds an Array from typed data.
Array make_array(DType dtype, std::vector<std::int64_t> shape, const void* data);

/// An open HDF5 file. Errors throw nnvmc::CheckpointError naming the file and object; a failed
/// write(), set_attr() or flush() throws nnvmc::WriteError.
class H5File {
 public:
  /// read: an existing file; truncate: a new file on disk; append: an existing file (or a new
  /// one) on disk; memory: a new file built in memory only (close_to_image() gives its bytes).
  enum class Mode { read, truncate, append, memory };
  H5File(const std::string& path, Mode mode);
  ~H5File();
  H5File(const H5File&) = delete;
  H5File& operator=(const H5File&) = delete;

  /// Writes an array at `name` ("group/sub/name": groups are created).
  void write(const std::string& name, const Array& a);
  /// Reads the array at `name`. @throws CheckpointError if missing.
  Array read(const std::string& name) const;
  bool exists(const std::string& name) const;
  /// Names of all datasets below `group` (recursive, relative to the group).
  std::vector<std::string> list(const std::string& group) const;
  /// Reads every dataset of the file once. @throws CheckpointError naming the first that cannot
  /// be listed or read (a damaged file HDF5 still opens: its metadata checksums fail on access)
  void verify_readable() const;

  void set_attr(const std::string& key, const std::string& value);  ///< root string attribute
  std::string attr(const std::string& key) const;                   ///< @throws if missing
  bool has_attr(const std::string& key) const;

  /// Appends one value to a growable 1-d float64 column (created on first use).
  void append(const std::string& column, double value);
  /// Appends `values` (in one write).
  void append(const std::string& column, const std::vector<double>& values);
  /// Length of a 1-d column (0 if it does not exist).
  std::int64_t rows(const std::string& column) const;
  /// Shrinks a growable column to its first `n` values (no-op if it is shorter).
  void truncate(const std::string& column, std::int64_t n);
  /// Removes a dataset or a group with everything below it (no-op if absent).
  void remove(const std::string& name);
  /// Writes buffered data to the file. @throws WriteError when the system refuses (disk full).
  void flush();
  /// Closes a Mode::memory file and returns its bytes (an HDF5 file image, taken as the file
  /// closes: an image of the open file has a stale superblock checksum in the 1.8 format).
  std::vector<unsigned char> close_to_image();
  const std::string& path() const { return path_; }

  /// What the in-memory file's buffer holds when it closes (see close_to_image).
  struct Image {
    std::size_t size = 0;      ///< bytes of the file (its end of allocation) when the close began
    std::size_t capacity = 0;  ///< bytes of the buffer that holds it
    bool take = false;     ///< set by close_to_image: keep the buffer's bytes as it is freed
    std::vector<unsigned char> bytes;
  };

 private:
  long long id_ = -1;
  /// read() allowing the dataset `unstored_bytes` more than the file stores for it (unwritten chunks).
  Array read(const std::string& name, double unstored_bytes) const;
  std::string path_;
  /// The first failed write (HDF5 may report a failed flush of its caches once and later
  /// succeed with data it dropped: a full disk stored rows as zeros, exit 0); every later
  /// append() and flush() fails with it.
  std::string write_failure_;
  [[noreturn]] void fail_sticky(const std::string& what);
  std::unique_ptr<Image> image_;  ///< Mode::memory only (the file's image callbacks point here)
};

/// A file whose last writes failed (a file-size limit refuses them) can end before the end of
/// file its superblock records, and HDF5 then refuses to open it at all ("truncated file").
/// Extends such a file with zeros to that end (the data of the failed writes reads as zeros),
/// when it is an HDF5 file with a version-2/3 superblock (what H5File writes) missing at most
/// 64 MiB. @return whether it was extended
bool repair_truncated_hdf5(const std::string& path);

/// Writes a file atomically: `fill` writes into an in-memory file whose bytes go to `path`.tmp
/// (every write checked, fsync'ed), which is then renamed to `path`. HDF5 itself never writes
/// to the disk, so a full disk is an exception, not a damaged file. On any exception the
/// temporary is removed and `path` is untouched.
template <class F> void write_atomically(const std::string& path, F&& fill) {
  std::vector<unsigned char> bytes;
  {
    H5File f(path + ".tmp", H5File::Mode::memory);  // in memory only: the name is a label
    fill(f);
    bytes = f.close_to_image();
  }
  write_bytes_atomically(path, bytes.data(), bytes.size());
}

}  // namespace nnvmc::io
