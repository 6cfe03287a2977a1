#include "util/atomic_file.hpp"

#include <cerrno>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

namespace moonmq::util {
namespace {

std::error_code last_error() {
  return {errno, std::generic_category()};
}

std::error_code write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    auto n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return last_error();
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return {};
}

}  // namespace

std::error_code fsync_dir(const std::string& dir) {
  int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return last_error();
  std::error_code ec;
  if (::fsync(fd) != 0)
    ec = last_error();
  ::close(fd);
  return ec;
}

std::error_code write_file_atomic(const std::string& path, std::string_view contents) {
  auto tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return last_error();
  auto ec = write_all(fd, contents);
  if (!ec && ::fsync(fd) != 0)
    ec = last_error();
  if (::close(fd) != 0 && !ec)
    ec = last_error();
  if (!ec && std::rename(tmp.c_str(), path.c_str()) != 0)
    ec = last_error();
  if (ec) {
    ::unlink(tmp.c_str());
    return ec;
  }
  return fsync_dir(std::filesystem::path{path}.parent_path().string());
}

std::error_code read_file(const std::string& path, std::string& out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return last_error();
  out.clear();
  char buf[65536];
  for (;;) {
    auto n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      auto ec = last_error();
      ::close(fd);
      return ec;
    }
    if (n == 0)
      break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return {};
}

}  // namespace moonmq::util
