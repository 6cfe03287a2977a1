#pragma once
// How slow this broker's disk and produce path are right now (docs/balancer.md
// "Slow brokers"): the process-wide latency windows that GET /cluster/loads
// reports as "latency" and the balancer compares across brokers.
//
// - sync: every group commit round's sync (the WAL commit and the segments'
//   fdatasync/syncfs of one I/O worker round) and every disk probe;
// - produce: per group commit round, the wait of its oldest append, from
//   the moment it waited for the round until the round answered it.
//
// A disk probe writes and fdatasyncs one 4 KiB block every second, so a
// broker that holds no partition (a slow one the balancer shed) still
// measures its disk and can be seen to recover.

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "util/latency_window.hpp"

namespace moonmq::storage {

/// Length of the windows: 30 slots of 1 s.
inline constexpr int kLatencyWindowSeconds = 30;

struct disk_latency {
  util::latency_window sync{kLatencyWindowSeconds, 1000};
  util::latency_window produce{kLatencyWindowSeconds, 1000};
};

/// The windows of this process.
disk_latency& process_latency();

/// Test hook for a slow disk: when the environment variable
/// MOONMQ_TEST_SYNC_DELAY_MS holds an integer in 1–10000 at the first call,
/// every call sleeps that many milliseconds; otherwise it does nothing.
/// Called after each group commit round's sync and each probe, so a broker
/// started with it looks exactly like one whose fdatasync takes that long.
void test_sync_delay();

/// Writes 4 KiB at offset 0 of `<dir>/.disk-probe` and fdatasyncs it every
/// `every`, recording each duration (write, sync and test delay) in
/// process_latency().sync. Its own thread; stops (and joins) on
/// destruction. A failed open, write or sync counts as a sample of 10 s (a
/// failing disk is slow) and is tried again at the next tick.
class disk_probe {
 public:
  disk_probe(std::string dir, std::chrono::milliseconds every);
  ~disk_probe();
  disk_probe(const disk_probe&) = delete;
  disk_probe& operator=(const disk_probe&) = delete;

 private:
  void run();

  std::string path_;
  std::chrono::milliseconds every_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace moonmq::storage
