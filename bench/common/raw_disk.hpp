#pragma once
// The physical limit that storage and broker benchmarks print beside their
// figures: the same bytes written sequentially to the same disk with an
// fdatasync after each chunk, without moonmq in between.

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <string>

namespace moonmq::bench {

/// Seconds to write `chunks` copies of `chunk` to `path` with an fdatasync
/// after each, or a negative value on an I/O error. Removes the file.
inline double raw_write_seconds(const std::string& path, const std::string& chunk, int chunks) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return -1;
  auto t0 = std::chrono::steady_clock::now();
  for (int b = 0; b < chunks; ++b) {
    size_t done = 0;
    while (done < chunk.size()) {
      auto n = ::write(fd, chunk.data() + done, chunk.size() - done);
      if (n <= 0) {
        ::close(fd);
        return -1;
      }
      done += static_cast<size_t>(n);
    }
    if (::fdatasync(fd) != 0) {
      ::close(fd);
      return -1;
    }
  }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ::close(fd);
  ::unlink(path.c_str());
  return s;
}

}  // namespace moonmq::bench
