#include "storage/file_deleter.hpp"

#include <cerrno>
#include <chrono>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/file_io.hpp"
#include "util/logging.hpp"

namespace moonmq::storage {

status delete_gradually(const std::string& path) {
  constexpr off_t step = 32LL << 20;
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd >= 0) {
    struct stat st {};
    off_t size = ::fstat(fd, &st) == 0 ? st.st_size : 0;
    while (size > step) {
      size -= step;
      if (::ftruncate(fd, size) != 0)
        break;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    ::close(fd);
  }
  if (::unlink(path.c_str()) != 0 && errno != ENOENT)
    return io_error("unlink", path);
  return {};
}

file_deleter::file_deleter() : thread_([this] { run(); }) {}

file_deleter::~file_deleter() {
  {
    std::lock_guard<std::mutex> g{mtx_};
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void file_deleter::submit(std::string path) {
  {
    std::lock_guard<std::mutex> g{mtx_};
    queue_.push_back(std::move(path));
  }
  wake_.notify_one();
}

uint64_t file_deleter::deleted() const {
  std::lock_guard<std::mutex> g{mtx_};
  return deleted_;
}

size_t file_deleter::queued() const {
  std::lock_guard<std::mutex> g{mtx_};
  return queue_.size();
}

void file_deleter::drain() {
  std::unique_lock<std::mutex> g{mtx_};
  idle_.wait(g, [this] { return queue_.empty() && !busy_; });
}

void file_deleter::run() {
  std::unique_lock<std::mutex> g{mtx_};
  while (true) {
    wake_.wait(g, [this] { return stop_ || !queue_.empty(); });
    if (stop_)
      break;
    auto path = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    g.unlock();
    if (auto st = delete_gradually(path); !st)
      log::get("storage")->warn("segment.delete_failed path={} error=\"{}\" msg=\"the next open of its log removes "
                                "it\"",
                                path, st.err().message);
    g.lock();
    busy_ = false;
    ++deleted_;
    if (queue_.empty())
      idle_.notify_all();
  }
  busy_ = false;
  idle_.notify_all();
}

}  // namespace moonmq::storage
