#pragma once
// Group commit across partitions: one sync round makes the appends of many
// partition logs durable together (docs/storage.md "Threads, group commit
// and file descriptors").
//
// A single log is synced with its own fdatasync (partition_log::flush).
// Several on one file system are synced with one syncfs(2): one journal
// commit on ext4 instead of one per file, measured at about 10 ms for 1,000
// dirty files against about 140 ms for 1,000 fdatasyncs in a row on the
// test machine. When a syncfs fails, each log of the round falls back to
// its own fdatasync, which reports the failure against the file it belongs
// to (Linux keeps write-back errors per file as well as per file system),
// and the caller fdatasyncs every other log written since its own last
// fdatasync (sync_round_stats::syncfs_failed).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "storage/file_io.hpp"
#include "storage/partition_log.hpp"

namespace moonmq::storage {

/// Directory descriptors kept open for syncfs, one per file system. A
/// descriptor reports the write-back errors of its file system that
/// happened since it was opened, whoever else reported them (Linux >= 5.8
/// keeps a cursor per open file), so it is opened once, early, and kept;
/// a fresh descriptor per call would miss an error another caller saw.
/// syncfs reports no errors at all before Linux 5.8: there, usable() is
/// false and every log syncs with its own fdatasync.
class syncfs_handles {
 public:
  /// Opens a descriptor for the file system of `dir` now (the data
  /// directory), when syncfs is usable.
  explicit syncfs_handles(const std::string& dir = {});
  bool usable() const { return usable_; }
  /// syncfs of file system `device`, through the descriptor opened for it
  /// (opened on first use from `dir`, a directory on it).
  status sync(uint64_t device, const std::string& dir);

 private:
  bool usable_ = false;
  std::map<uint64_t, unique_fd> fds_;
};

/// What one round did.
struct sync_round_stats {
  uint64_t syncfs_calls = 0;
  uint64_t fdatasyncs = 0;  ///< logs synced by their own flush (single log, or after a failed syncfs)
  /// A syncfs failed: the error may belong to a log outside the round, so
  /// the caller fdatasyncs every log with written_since_fdatasync().
  bool syncfs_failed = false;
};

/// Makes everything appended to each of `logs` durable; returns, per log
/// and in the same order, its durable offset or the error of its own
/// fdatasync (the caller takes that partition offline). Each log must
/// appear once.
std::vector<result<offset>> sync_round(const std::vector<partition_log*>& logs, syncfs_handles& handles,
                                       sync_round_stats& stats);

/// Closes `logs` cleanly together: a sync_round, then each log's clean
/// checkpoint written in place without an fsync of its own (partition_log::
/// close_synced), then one more syncfs per file system for those
/// checkpoints. A log whose sync failed keeps its old checkpoint. One log
/// closes on its own (partition_log::close). Returns per log the result of
/// its close.
std::vector<status> close_together(const std::vector<partition_log*>& logs, syncfs_handles& handles,
                                   sync_round_stats& stats);

}  // namespace moonmq::storage
