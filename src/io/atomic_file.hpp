#pragma once
/// @file atomic_file.hpp
/// Files replaced atomically: written in full to `path`.tmp (every write checked, fsync'ed),
/// then renamed over `path`, so a reader (or a resumed run) sees the old file or the new one,
/// never a half-written one, and a full disk is an exception. Torch- and HDF5-free.
#include <cstddef>
#include <string>

namespace nnvmc::io {

/// Writes `bytes` bytes at `data` to `path` (created or truncated) and fsyncs it.
/// @throws WriteError naming the system's reason (e.g. "No space left on device").
void write_file_synced(const std::string& path, const void* data, std::size_t bytes);

/// Renames `tmp` over `path` and syncs the directory that holds it. @throws WriteError.
void rename_into_place(const std::string& tmp, const std::string& path);

/// Removes `path` if it exists; never throws.
void remove_quietly(const std::string& path);

/// Replaces `path` by `bytes` bytes at `data` atomically (through `path`.tmp, removed on
/// failure). @throws WriteError; `path` is then untouched.
void write_bytes_atomically(const std::string& path, const void* data, std::size_t bytes);

/// write_bytes_atomically of a text.
void write_text_atomically(const std::string& path, const std::string& text);

}  // namespace nnvmc::io
