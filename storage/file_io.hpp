#pragma once
// Thin POSIX file helpers for the storage module: an owning fd and full
// pread/pwrite loops that report errno as storage error values.

#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>

#include "storage/types.hpp"

namespace moonmq::storage {

/// Owns one file descriptor; closes it on destruction. Move-only.
class unique_fd {
 public:
  unique_fd() = default;
  explicit unique_fd(int fd) : fd_(fd) {}
  unique_fd(unique_fd&& o) noexcept : fd_(o.release()) {}
  unique_fd& operator=(unique_fd&& o) noexcept;
  unique_fd(const unique_fd&) = delete;
  unique_fd& operator=(const unique_fd&) = delete;
  ~unique_fd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset();

 private:
  int fd_ = -1;
};

/// io_error carrying the current errno and "<what> path=<path>: <strerror>".
error io_error(const std::string& what, const std::string& path);

/// io_error carrying `ec` and "<what> path=<path>: <message>" (for
/// std::filesystem and util calls that report an error_code).
error fs_error(const char* what, const std::string& path, const std::error_code& ec);

/// fsync of the directory `dir` (its entries: files created, renamed or
/// removed in it). Errors: io_error.
status sync_dir(const std::string& dir);

/// Opens `path` with open(2) `flags` (O_CLOEXEC is added), mode 0644.
result<unique_fd> open_file(const std::string& path, int flags);

/// Reads exactly `n` bytes at `pos` into `out` (resized). Errors:
/// short_buffer when the file ends first, io_error on a failed read.
status pread_exact(int fd, uint64_t pos, size_t n, std::string& out, const std::string& path);

/// Writes all of `data` at `pos`, retrying short writes and EINTR.
status pwrite_all(int fd, uint64_t pos, std::string_view data, const std::string& path);

/// syncfs(2) on the file system holding `path` (a directory): every dirty
/// page, inode and directory entry of that file system reaches the disk,
/// with one journal commit, however many files were written. Linux reports
/// write-back errors to syncfs since 5.8 (Debian 12 runs 6.1); the caller
/// still learns which file failed from that file's own fdatasync. Errors:
/// io_error.
status sync_filesystem(const std::string& path);

/// Size in bytes of the open file `fd`.
result<uint64_t> file_size(int fd, const std::string& path);

}  // namespace moonmq::storage
