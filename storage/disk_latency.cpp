#include "storage/disk_latency.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <string_view>

#include "storage/file_io.hpp"
#include "util/clock.hpp"

namespace moonmq::storage {

namespace {

/// What a failed probe counts as: a disk that fails is as slow as it gets.
constexpr double kFailedProbeMs = 10000.0;

}  // namespace

disk_latency& process_latency() {
  static disk_latency windows;
  return windows;
}

void test_sync_delay() {
  static const int delay_ms = [] {
    const char* v = std::getenv("MOONMQ_TEST_SYNC_DELAY_MS");
    if (!v)
      return 0;
    char* end = nullptr;
    long ms = std::strtol(v, &end, 10);
    return end != v && *end == '\0' && ms >= 1 && ms <= 10000 ? static_cast<int>(ms) : 0;
  }();
  if (delay_ms > 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
}

disk_probe::disk_probe(std::string dir, std::chrono::milliseconds every)
    : path_(std::move(dir) + "/.disk-probe"), every_(every), thread_([this] { run(); }) {}

disk_probe::~disk_probe() {
  {
    std::lock_guard g{mu_};
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void disk_probe::run() {
  const std::string block(4096, '\0');
  for (;;) {
    {
      std::unique_lock lk{mu_};
      if (cv_.wait_for(lk, every_, [this] { return stop_; }))
        return;
    }
    const auto t0 = std::chrono::steady_clock::now();
    unique_fd fd(::open(path_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
    const bool ok = fd.valid() && pwrite_all(fd.get(), 0, block, path_) && ::fdatasync(fd.get()) == 0;
    test_sync_delay();
    if (ok)
      process_latency().sync.record_since(t0);
    else
      process_latency().sync.record(kFailedProbeMs, util::monotonic_ms());
  }
}

}  // namespace moonmq::storage
