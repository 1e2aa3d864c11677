#include "io/hdf5_file.hpp"

#include <hdf5.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/errors.hpp"

namespace nnvmc::io {
namespace {

hid_t h5type(DType t) {
  switch (t) {
    case DType::f64: return H5T_NATIVE_DOUBLE;
    case DType::f32: return H5T_NATIVE_FLOAT;
    case DType::i64: return H5T_NATIVE_INT64;
    case DType::u8: return H5T_NATIVE_UINT8;
  }
  return H5T_NATIVE_DOUBLE;
}
size_t elem_size(DType t) {
  switch (t) {
    case DType::f64: case DType::i64: return 8;
    case DType::f32: return 4;
    case DType::u8: return 1;
  }
  return 8;
}

/// Set up before HDF5's first call (a static): no exit handler, and no error printing of its own
/// (we report through exceptions). After a failed write (disk full, ulimit -f) a file's H5Fclose
/// fails, and HDF5 1.10's exit handler then crashes closing it again; files that closed are
/// complete, so the handler has nothing to do.
struct QuietHdf5 {
  QuietHdf5() {
    H5dont_atexit();
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
};
const QuietHdf5 quiet_hdf5;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw CheckpointError(path + ": " + what);
}
/// A write that failed is not bad input (exit code 1, not 2).
[[noreturn]] void fail_write(const std::string& path, const std::string& what) {
  throw WriteError(path + ": " + what);
}

/// Closes an HDF5 handle at scope exit.
struct Handle {
  hid_t id;
  herr_t (*close)(hid_t);
  ~Handle() {
    if (id >= 0) close(id);
  }
};

/// File access for new files: the HDF5 1.8 format, whose dense attribute storage holds
/// attributes over 64 KiB (a long config or a profile's JSON; the 1.6 format that HDF5 writes
/// by default refuses them), readable by HDF5 1.8 and later.
hid_t new_file_access() {
  const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  if (fapl >= 0) H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_V18);
  return fapl;
}

// The in-memory file's buffer, through HDF5's file-image callbacks: plain malloc/realloc, and
// at close (H5FD_FILE_IMAGE_OP_FILE_CLOSE) the finished file's bytes are copied out when
// close_to_image asked for them.
void* image_malloc(std::size_t n, H5FD_file_image_op_t, void* udata) {
  static_cast<H5File::Image*>(udata)->capacity = n;
  return std::malloc(n);
}
void* image_memcpy(void* to, const void* from, std::size_t n, H5FD_file_image_op_t, void*) {
  return std::memcpy(to, from, n);
}
void* image_realloc(void* p, std::size_t n, H5FD_file_image_op_t, void* udata) {
  static_cast<H5File::Image*>(udata)->capacity = n;
  return std::realloc(p, n);
}
/// The end-of-file address a version 2 or 3 superblock (the 1.8 and later formats, 8-byte
/// addresses) records; 0 for any other start.
std::size_t superblock_end_of_file(const unsigned char* b, std::size_t n) {
  static const unsigned char signature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  if (n < 36 || std::memcmp(b, signature, 8) != 0 || (b[8] != 2 && b[8] != 3) || b[9] != 8) return 0;
  std::uint64_t eof = 0;
  for (int i = 7; i >= 0; --i) eof = (eof << 8) | b[28 + i];  // (little-endian)
  return static_cast<std::size_t>(eof);
}
herr_t image_free(void* p, H5FD_file_image_op_t op, void* udata) {
  auto* image = static_cast<H5File::Image*>(udata);
  if (op == H5FD_FILE_IMAGE_OP_FILE_CLOSE && image != nullptr && image->take && p != nullptr) {
    try {
      const auto* b = static_cast<const unsigned char*>(p);
      // (the size taken before the close, or more if the close wrote past it)
      const std::size_t n = std::min(image->capacity, std::max(image->size, superblock_end_of_file(b, image->capacity)));
      image->bytes.assign(b, b + n);
    } catch (...) {  // (no exception may cross HDF5; close_to_image sees the missing bytes)
      image->bytes.clear();
    }
  }
  std::free(p);
  return 0;
}
void* image_udata_copy(void* udata) { return udata; }  // (one Image per file, owned by it)
herr_t image_udata_free(void*) { return 0; }

void ensure_groups(hid_t file, const std::string& name) {
  size_t pos = 0;
  while ((pos = name.find('/', pos + 1)) != std::string::npos) {
    const std::string g = name.substr(0, pos);
    if (H5Lexists(file, g.c_str(), H5P_DEFAULT) <= 0) {
      Handle h{H5Gcreate2(file, g.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose};
    }
  }
}

/// Whether `name` exists; H5Lexists needs every intermediate group to exist. A lookup that fails
/// (a group header HDF5 cannot read: a damaged file) throws CheckpointError: taken for "absent",
/// a resume read a truncated result.h5 as holding no series and wrote on into it (a user audit).
bool link_exists(hid_t file, const std::string& path, const std::string& name) {
  const auto exists = [&](const std::string& n) {
    const htri_t e = H5Lexists(file, n.c_str(), H5P_DEFAULT);
    if (e < 0) fail(path, "cannot look up '" + n + "' (damaged file?)");
    return e > 0;
  };
  size_t pos = 0;
  while ((pos = name.find('/', pos + 1)) != std::string::npos)
    if (!exists(name.substr(0, pos))) return false;
  return exists(name);
}
}  // namespace

std::int64_t Array::numel() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

Array make_array(DType dtype, std::vector<std::int64_t> shape, const void* data) {
  Array a;
  a.dtype = dtype;
  a.shape = std::move(shape);
  a.bytes.resize(a.numel() * elem_size(dtype));
  if (!a.bytes.empty()) std::memcpy(a.bytes.data(), data, a.bytes.size());
  return a;
}

H5File::H5File(const std::string& path, Mode mode) : path_(path) {
  if (mode == Mode::read) {
    if (!std::filesystem::exists(path)) fail(path, "no such file");
    if (H5Fis_hdf5(path.c_str()) <= 0) {
      const std::string ext = std::filesystem::path(path).extension().string();
      if (ext == ".yaml" || ext == ".yml" || ext == ".json" || ext == ".csv" || ext == ".md" || ext == ".txt")
        fail(path, "a " + ext.substr(1) + " file, not an HDF5 file (a run's config or report, where its checkpoint.h5 "
                   "or result.h5 was meant?)");
      fail(path, "not an HDF5 file (corrupt or truncated?)");
    }
    errno = 0;
    id_ = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  } else if (mode == Mode::memory) {
    // the core driver without a backing store: nothing reaches the disk through HDF5
    Handle fapl{new_file_access(), H5Pclose};
    image_ = std::make_unique<Image>();
    H5FD_file_image_callbacks_t callbacks{image_malloc, image_memcpy, image_realloc, image_free,
                                          image_udata_copy, image_udata_free, image_.get()};
    if (fapl.id < 0 || H5Pset_fapl_core(fapl.id, std::size_t(1) << 20, 0) < 0 ||
        H5Pset_file_image_callbacks(fapl.id, &callbacks) < 0)
      fail(path, "cannot set up an in-memory file");
    id_ = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.id);
  } else if (mode == Mode::append && std::filesystem::exists(path)) {
    errno = 0;
    id_ = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  } else {
    Handle fapl{new_file_access(), H5Pclose};
    errno = 0;
    id_ = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.id);
  }
  // HDF5 locks the files it opens (flock): a writer cannot open one that another program
  // (h5py, h5dump, HDFView) has open. That is not damage; the file is left alone.
  // (a reader is refused too while a writer holds it: not "damaged or truncated?", a review)
  if (id_ < 0 && mode != Mode::memory && (errno == EWOULDBLOCK || errno == EAGAIN))
    throw InputError(path + (mode == Mode::read ? ": being written by another program (a running nnvmc?); try again "
                                                  "when it has finished"
                                                : ": open in another program (HDF5 locks the files it reads: close it "
                                                  "there, e.g. the h5py.File, and try again)"));
  // A file that could not be created or written (full disk, quota, file-size limit) is a failed
  // write with its OS reason (exit 1), not bad input: it read "cannot open HDF5 file", exit 2
  const int err = errno;
  if (id_ < 0 && mode != Mode::read && mode != Mode::memory &&
      (err == ENOSPC || err == EDQUOT || err == EFBIG || err == EROFS || err == EIO || err == EACCES || err == EPERM))
    fail_write(path, std::string(mode == Mode::append && std::filesystem::exists(path) ? "cannot open HDF5 file: "
                                                                                      : "cannot create HDF5 file: ") +
                         std::strerror(err));
  if (id_ < 0) fail(path, mode == Mode::read ? "cannot open HDF5 file (damaged or truncated?)" : "cannot open HDF5 file");
}

bool repair_truncated_hdf5(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char sb[48] = {};
  if (!in.read(reinterpret_cast<char*>(sb), sizeof sb)) return false;
  static const unsigned char kSignature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  // version 2/3: signature, version, offset and length sizes, flags, then 8-byte base address,
  // superblock extension address, end-of-file address
  if (std::memcmp(sb, kSignature, 8) != 0 || (sb[8] != 2 && sb[8] != 3) || sb[9] != 8) return false;
  const auto le64 = [&](int at) {
    std::uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | sb[at + i];
    return v;
  };
  const std::uint64_t end = le64(12) + le64(28);
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec || size >= end || end - size > (std::uint64_t(64) << 20)) return false;
  std::filesystem::resize_file(path, end, ec);
  return !ec;
}

H5File::~H5File() {
  if (id_ >= 0) H5Fclose(id_);
}

void H5File::write(const std::string& name, const Array& a) {
  ensure_groups(id_, name);
  if (link_exists(id_, path_, name)) H5Ldelete(id_, name.c_str(), H5P_DEFAULT);
  std::vector<hsize_t> dims(a.shape.begin(), a.shape.end());
  Handle space{a.shape.empty() ? H5Screate(H5S_SCALAR)
                               : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
               H5Sclose};
  Handle ds{H5Dcreate2(id_, name.c_str(), h5type(a.dtype), space.id, H5P_DEFAULT, H5P_DEFAULT,
                       H5P_DEFAULT),
            H5Dclose};
  if (ds.id < 0) fail_write(path_, "cannot create dataset '" + name + "'");
  if (a.numel() > 0 &&
      H5Dwrite(ds.id, h5type(a.dtype), H5S_ALL, H5S_ALL, H5P_DEFAULT, a.bytes.data()) < 0)
    fail_write(path_, "cannot write dataset '" + name + "'");
}

Array H5File::read(const std::string& name) const { return read(name, 0); }

Array H5File::read(const std::string& name, double unstored_bytes) const {
  if (!link_exists(id_, path_, name)) fail(path_, "missing dataset '" + name + "'");
  Handle ds{H5Dopen2(id_, name.c_str(), H5P_DEFAULT), H5Dclose};
  if (ds.id < 0) fail(path_, "cannot open dataset '" + name + "'");
  Handle space{H5Dget_space(ds.id), H5Sclose};
  Handle type{H5Dget_type(ds.id), H5Tclose};
  const int rank = H5Sget_simple_extent_ndims(space.id);
  if (rank < 0) fail(path_, "corrupt dataset '" + name + "'");
  std::vector<hsize_t> dims(rank);
  H5Sget_simple_extent_dims(space.id, dims.data(), nullptr);
  Array a;
  const auto cls = H5Tget_class(type.id);
  const size_t size = H5Tget_size(type.id);
  if (cls == H5T_FLOAT) a.dtype = size == 4 ? DType::f32 : DType::f64;
  else if (cls == H5T_INTEGER) a.dtype = size == 1 ? DType::u8 : DType::i64;
  else fail(path_, "dataset '" + name + "' has an unsupported type");
  a.shape.assign(dims.begin(), dims.end());
  // A damaged header can claim any shape: never allocate more than the file stores.
  double needed = static_cast<double>(elem_size(a.dtype));
  for (const auto d : dims) needed *= static_cast<double>(d);
  if (needed > static_cast<double>(H5Dget_storage_size(ds.id)) + unstored_bytes)
    fail(path_, "dataset '" + name + "' claims more data than the file holds (corrupt file?)");
  a.bytes.resize(a.numel() * elem_size(a.dtype));
  if (a.numel() > 0 &&
      H5Dread(ds.id, h5type(a.dtype), H5S_ALL, H5S_ALL, H5P_DEFAULT, a.bytes.data()) < 0)
    fail(path_, "cannot read dataset '" + name + "' (corrupt file?)");
  return a;
}

bool H5File::exists(const std::string& name) const { return link_exists(id_, path_, name); }

std::vector<std::string> H5File::list(const std::string& group) const {
  std::vector<std::string> names;
  if (group != "/" && !link_exists(id_, path_, group)) return names;
  struct Ctx {
    std::vector<std::string>* out;
  } ctx{&names};
  auto cb = [](hid_t, const char* name, const H5O_info_t* info, void* data) -> herr_t {
    if (info->type == H5O_TYPE_DATASET) static_cast<Ctx*>(data)->out->emplace_back(name);
    return 0;
  };
  Handle g{H5Gopen2(id_, group.c_str(), H5P_DEFAULT), H5Gclose};
  // (a visit that fails part-way listed only part of the group: damage, not fewer datasets)
  if (g.id < 0 || H5Ovisit(g.id, H5_INDEX_NAME, H5_ITER_INC, cb, &ctx) < 0)
    fail(path_, "cannot list the datasets of '" + group + "' (damaged file?)");
  return names;
}

void H5File::verify_readable() const {
  // (a growable column's last chunks may be unwritten after a failed append, and read as zeros:
  // up to 1 MiB unstored is no damage; a header claiming far more than the file stores is)
  for (const auto& name : list("/")) (void)read(name, double(1 << 20));
}

void H5File::set_attr(const std::string& key, const std::string& value) {
  if (H5Aexists(id_, key.c_str()) > 0) H5Adelete(id_, key.c_str());
  Handle type{H5Tcopy(H5T_C_S1), H5Tclose};
  H5Tset_size(type.id, value.size() + 1);
  Handle space{H5Screate(H5S_SCALAR), H5Sclose};
  Handle attr{H5Acreate2(id_, key.c_str(), type.id, space.id, H5P_DEFAULT, H5P_DEFAULT), H5Aclose};
  if (attr.id < 0 || H5Awrite(attr.id, type.id, value.c_str()) < 0)
    fail_write(path_, "cannot write attribute '" + key + "' (" + std::to_string(value.size()) + " bytes)");
}

bool H5File::has_attr(const std::string& key) const { return H5Aexists(id_, key.c_str()) > 0; }

std::string H5File::attr(const std::string& key) const {
  if (!has_attr(key)) fail(path_, "missing attribute '" + key + "'");
  Handle attr{H5Aopen(id_, key.c_str(), H5P_DEFAULT), H5Aclose};
  Handle type{H5Aget_type(attr.id), H5Tclose};
  const size_t size = H5Tget_size(type.id);
  std::string value(size, '\0');
  Handle mem{H5Tcopy(H5T_C_S1), H5Tclose};
  H5Tset_size(mem.id, size);
  if (H5Aread(attr.id, mem.id, value.data()) < 0) fail(path_, "cannot read attribute '" + key + "'");
  value.resize(std::strlen(value.c_str()));
  return value;
}

void H5File::append(const std::string& column, double value) { append(column, std::vector<double>{value}); }

void H5File::fail_sticky(const std::string& what) {
  const int e = errno;
  // A write the system refused (full disk, file-size limit, quota, I/O error) stays failed; any
  // other failure is the file's own (damage: CheckpointError, as every failed read).
  if (e != ENOSPC && e != EFBIG && e != EDQUOT && e != EIO && e != EROFS) fail(path_, what);
  if (write_failure_.empty()) write_failure_ = path_ + ": " + what + ": " + std::strerror(e);
  throw WriteError(write_failure_);
}

void H5File::append(const std::string& column, const std::vector<double>& values) {
  if (!write_failure_.empty()) throw WriteError(write_failure_);
  errno = 0;
  bool exists = false;
  try {
    exists = link_exists(id_, path_, column);
  } catch (const CheckpointError&) {  // (a lookup the system refused while writing, disk full: sticky, exit 1)
    fail_sticky("cannot look up column '" + column + "'");
  }
  if (!exists) {
    ensure_groups(id_, column);
    hsize_t dims = 0, maxdims = H5S_UNLIMITED, chunk = 256;
    Handle space{H5Screate_simple(1, &dims, &maxdims), H5Sclose};
    Handle plist{H5Pcreate(H5P_DATASET_CREATE), H5Pclose};
    H5Pset_chunk(plist.id, 1, &chunk);
    Handle ds{H5Dcreate2(id_, column.c_str(), H5T_NATIVE_DOUBLE, space.id, H5P_DEFAULT, plist.id,
                         H5P_DEFAULT),
              H5Dclose};
    if (ds.id < 0) fail_sticky("cannot create column '" + column + "'");
  }
  Handle ds{H5Dopen2(id_, column.c_str(), H5P_DEFAULT), H5Dclose};
  if (ds.id < 0) fail(path_, "'" + column + "' is not a column");
  hsize_t n = 0;
  {
    Handle space{H5Dget_space(ds.id), H5Sclose};
    if (space.id < 0 || H5Sget_simple_extent_dims(space.id, &n, nullptr) < 0) fail(path_, "'" + column + "' is not a column");
  }
  hsize_t count = values.size(), new_size = n + count;
  if (count == 0) return;
  // every step checked: a failed extent (a full disk while HDF5 evicts its caches) left the
  // write below to succeed into a cache whose data never reached the file
  if (H5Dset_extent(ds.id, &new_size) < 0) fail_sticky("cannot extend column '" + column + "'");
  Handle fspace{H5Dget_space(ds.id), H5Sclose};
  if (fspace.id < 0 || H5Sselect_hyperslab(fspace.id, H5S_SELECT_SET, &n, nullptr, &count, nullptr) < 0)
    fail_sticky("cannot select rows of column '" + column + "'");
  Handle mspace{H5Screate_simple(1, &count, nullptr), H5Sclose};
  if (H5Dwrite(ds.id, H5T_NATIVE_DOUBLE, mspace.id, fspace.id, H5P_DEFAULT, values.data()) < 0)
    fail_sticky("cannot append to column '" + column + "'");
  // Closing the dataset writes its chunk cache, the rows themselves: its failure (a full disk)
  // went unseen in the handle's destructor, and the rows read back as zeros.
  const hid_t id = ds.id;
  ds.id = -1;
  errno = 0;
  if (H5Dclose(id) < 0) fail_sticky("cannot write column '" + column + "'");
}

std::int64_t H5File::rows(const std::string& column) const {
  if (!link_exists(id_, path_, column)) return 0;
  Handle ds{H5Dopen2(id_, column.c_str(), H5P_DEFAULT), H5Dclose};
  Handle space{H5Dget_space(ds.id), H5Sclose};
  hsize_t n = 0;
  if (ds.id < 0 || space.id < 0 || H5Sget_simple_extent_ndims(space.id) != 1 ||
      H5Sget_simple_extent_dims(space.id, &n, nullptr) < 0)
    fail(path_, "'" + column + "' is not a column");
  return static_cast<std::int64_t>(n);
}

void H5File::truncate(const std::string& column, std::int64_t n) {
  if (!link_exists(id_, path_, column)) return;
  Handle ds{H5Dopen2(id_, column.c_str(), H5P_DEFAULT), H5Dclose};
  hsize_t cur = 0;
  {
    Handle space{H5Dget_space(ds.id), H5Sclose};
    H5Sget_simple_extent_dims(space.id, &cur, nullptr);
  }
  hsize_t target = static_cast<hsize_t>(n);
  if (target < cur && H5Dset_extent(ds.id, &target) < 0)
    fail(path_, "cannot truncate column '" + column + "'");
}

void H5File::remove(const std::string& name) {
  if (link_exists(id_, path_, name) && H5Ldelete(id_, name.c_str(), H5P_DEFAULT) < 0)
    fail(path_, "cannot remove '" + name + "'");
}

void H5File::flush() {
  if (!write_failure_.empty()) throw WriteError(write_failure_);
  errno = 0;
  if (H5Fflush(id_, H5F_SCOPE_GLOBAL) < 0) {  // the system's reason when HDF5 left it in errno
    write_failure_ = path_ + ": cannot write" + (errno != 0 ? ": " + std::string(std::strerror(errno)) : " (disk full?)");
    throw WriteError(write_failure_);
  }
}

std::vector<unsigned char> H5File::close_to_image() {
  if (!image_) fail(path_, "not an in-memory file");
  flush();
  const ssize_t size = H5Fget_file_image(id_, nullptr, 0);
  if (size < 0) fail(path_, "cannot take the in-memory file's image");
  image_->size = static_cast<std::size_t>(size);
  image_->take = true;
  const herr_t closed = H5Fclose(id_);
  id_ = -1;
  if (closed < 0 || image_->bytes.size() < image_->size) fail(path_, "cannot take the in-memory file's image");
  return std::move(image_->bytes);
}

}  // namespace nnvmc::io
