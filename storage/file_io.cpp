#include "storage/file_io.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/atomic_file.hpp"

namespace moonmq::storage {

unique_fd& unique_fd::operator=(unique_fd&& o) noexcept {
  if (this != &o) {
    reset();
    fd_ = o.release();
  }
  return *this;
}

void unique_fd::reset() {
  if (fd_ >= 0)
    ::close(fd_);
  fd_ = -1;
}

error io_error(const std::string& what, const std::string& path) {
  int e = errno;
  auto err = make_error(errc::io_error, what + " path=" + path + ": " + std::strerror(e));
  err.sys_errno = e;
  return err;
}

error fs_error(const char* what, const std::string& path, const std::error_code& ec) {
  auto e = make_error(errc::io_error, std::string(what) + " path=" + path + ": " + ec.message());
  e.sys_errno = ec.value();
  return e;
}

status sync_dir(const std::string& dir) {
  if (auto ec = util::fsync_dir(dir); ec)
    return fs_error("fsync_dir", dir, ec);
  return {};
}

status sync_filesystem(const std::string& path) {
  auto fd = open_file(path, O_RDONLY | O_DIRECTORY);
  if (!fd)
    return fd.err();
  if (::syncfs(fd->get()) != 0)
    return io_error("syncfs", path);
  return {};
}

result<unique_fd> open_file(const std::string& path, int flags) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
  if (fd < 0)
    return io_error("open", path);
  return unique_fd(fd);
}

status pread_exact(int fd, uint64_t pos, size_t n, std::string& out, const std::string& path) {
  out.resize(n);
  size_t done = 0;
  while (done < n) {
    auto r = ::pread(fd, out.data() + done, n - done, static_cast<off_t>(pos + done));
    if (r < 0) {
      if (errno == EINTR)
        continue;
      return io_error("pread", path);
    }
    if (r == 0) {
      out.resize(done);
      return make_error(errc::short_buffer, "file ends at " + std::to_string(pos + done) +
                                                " path=" + path);
    }
    done += static_cast<size_t>(r);
  }
  return {};
}

status pwrite_all(int fd, uint64_t pos, std::string_view data, const std::string& path) {
  size_t done = 0;
  while (done < data.size()) {
    auto r = ::pwrite(fd, data.data() + done, data.size() - done, static_cast<off_t>(pos + done));
    if (r < 0) {
      if (errno == EINTR)
        continue;
      return io_error("pwrite", path);
    }
    done += static_cast<size_t>(r);
  }
  return {};
}

result<uint64_t> file_size(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    return io_error("fstat", path);
  return static_cast<uint64_t>(st.st_size);
}

}  // namespace moonmq::storage
