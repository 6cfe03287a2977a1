#pragma once
// Deletes retired segment files (`*.log.deleted`) on a thread of its own,
// so that the I/O worker holding many partitions never waits for one
// partition's retention or reset. Each file is shrunk 32 MiB at a time,
// 2 ms apart, before the unlink (docs/storage.md "Retention": one unlink
// of a 1 GiB file held the ext4 journal for about 0.35 s, stalling every
// fsync on the disk).

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include "storage/types.hpp"

namespace moonmq::storage {

/// Shrinks the file at `path` in 32 MiB steps 2 ms apart, then unlinks it.
/// A missing file is not an error. Errors: io_error (the unlink failed).
status delete_gradually(const std::string& path);

class file_deleter {
 public:
  file_deleter();
  /// Stops after the file being deleted; files still queued stay on disk
  /// as `*.deleted` and the next open of their log removes them.
  ~file_deleter();
  file_deleter(const file_deleter&) = delete;
  file_deleter& operator=(const file_deleter&) = delete;

  /// Queues `path` (already renamed away by its log) for delete_gradually.
  void submit(std::string path);

  /// Files deleted so far, and files waiting.
  uint64_t deleted() const;
  size_t queued() const;

  /// Blocks until the queue is empty (tests).
  void drain();

 private:
  void run();

  mutable std::mutex mtx_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  std::deque<std::string> queue_;
  bool busy_ = false;
  bool stop_ = false;
  uint64_t deleted_ = 0;
  std::thread thread_;
};

}  // namespace moonmq::storage
