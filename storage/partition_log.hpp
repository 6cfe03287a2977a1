#pragma once
// The log of one partition: a directory `<data_dir>/<topic>-<partition>/` of
// segments (see segment.hpp). Single-threaded: the owner (one I/O worker)
// calls every method; nothing here starts threads. Per-log memory is a few
// numbers per segment plus the active segment's sparse index; at most the
// active segment's log file is open (sealed segments are opened per read),
// and the owner may release that fd while the log is idle (release_fd).

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "storage/producer_state.hpp"
#include "storage/record_batch.hpp"
#include "storage/segment.hpp"
#include "storage/txn_state.hpp"
#include "storage/types.hpp"

namespace moonmq::storage {

class file_deleter;

/// Per-log settings (topic config keys in parentheses).
struct log_config {
  uint64_t segment_bytes = uint64_t{1} << 30;  ///< roll threshold (segment.bytes), capped at 2 GiB
  /// Bytes of appends the active segment may hold in memory before they
  /// are written to its file in one pwrite (write-behind; 0: every append
  /// is written at once). flush, a sync round, a roll, a read and dropping
  /// the log write them first. Held bytes are not in the page cache: a
  /// process crash loses them, so only a log whose appends are made durable
  /// elsewhere before they are acknowledged may hold any (an I/O worker's
  /// write-ahead log, docs/storage.md "Write-behind").
  size_t write_behind_bytes = 0;
  size_t index_interval_bytes = 4096;          ///< bytes between index entries
  /// Least time in ms between two recovery-point writes by flush() (each is
  /// an atomic file replace: two fsyncs); 0 writes on every flush that
  /// advances it. Acknowledged records past the recovery point are the ones
  /// recovery may still cut as a torn tail, so this bounds that window.
  int64_t checkpoint_interval_ms = 1000;
  /// Where retired segment files go to be deleted gradually (retention,
  /// reset); null deletes them in the calling thread. Not owned: it must
  /// outlive the log.
  file_deleter* deleter = nullptr;
  /// Called once, before a log opened without its directory creates it
  /// (materialize): shared storage writes the epoch's takeover record there
  /// (epoch_chain.hpp), so no byte of an epoch exists without it. An error
  /// stops the materialize (nothing is created). Null: nothing to do.
  std::function<status()> before_materialize;
};

/// What a log continues in shared storage (docs/shared-storage.md): the
/// segments of earlier owner epochs, oldest first, each with
/// closed_segment::dir and memory_index set and `size` cut where its epoch
/// ends, and the idempotent producers and transactions their batch headers
/// record. Built by open_epoch (epoch_chain.hpp).
struct chain_prefix {
  std::vector<closed_segment> segments;
  producer_state producers;
  txn_state txns;
  offset end{0};  ///< where the earlier epochs end: the first offset the log itself holds
};

/// One cut made by partition_log::repair.
struct repair_cut {
  std::string path;          ///< segment file cut (the partition directory when none was left)
  uint64_t position = 0;     ///< byte position of the cut
  offset first{0};           ///< first offset removed
  offset end{0};             ///< one past the last offset removed; appends continue at or above it
  uint64_t records = 0;      ///< offsets removed: end - first
  uint64_t bytes = 0;        ///< bytes removed from `path`
  std::string reason;        ///< why the batch at `position` was invalid
};

/// What partition_log::repair removed, over every cut.
struct repair_result {
  std::vector<repair_cut> cuts;  ///< in the order made; empty when the log opened as it was
  uint64_t records = 0;
  uint64_t bytes = 0;
};

/// Bytes returned by partition_log::read plus the log bounds at read time.
struct read_result {
  std::string batches;  ///< whole v2 batches, empty when reading at LEO
  offset log_start{0};
  offset log_end{0};
};

/// What apply_retention removed.
struct retention_result {
  size_t segments_deleted = 0;
  uint64_t bytes_deleted = 0;
};

/// `<data_dir>/<topic>-<partition>`.
std::string partition_dir(const std::string& data_dir, const std::string& topic, int32_t partition);

class partition_log {
 public:
  /// Opens the log in `dir`, creating an empty log starting at offset 0 if
  /// the directory has no segment (and no recovery point above 0). When
  /// `dir` does not exist the log is empty and nothing is created on disk
  /// until something is written (materialize: the first append, reset or
  /// an explicit call), so a topic's partitions cost no file-system work
  /// until they take records, and a broker's copies of partitions other
  /// brokers own cost none at all. A log materialized that way is not synced
  /// yet (no fsync of the new files and directories; its checkpoint,
  /// recovery point 0, is written without an fsync before its first
  /// append): its first flush() or synced_by_filesystem() makes it durable,
  /// before anything appended to it can be acknowledged, so creating many
  /// partitions costs no fsync each (a crash before that flush loses an
  /// empty directory, which the next open treats as an empty log again).
  /// Recovery
  /// (docs/storage.md): sealed segments get their index checked (rebuilt by
  /// a full scan when torn) and their batch headers walked; the last segment
  /// is fully scanned. Only a torn tail may be cut (durably, event
  /// log.truncated): the first invalid batch of the last segment, when it
  /// starts at or past the recovery point of `<dir>/recovery-point` and the
  /// log was not closed cleanly, or, without a readable checkpoint, when it
  /// runs past the end of the file. Any other invalid batch, or a log that
  /// ends below its recovery point, is corrupt_log with error::damaged
  /// (file, position, offsets [first, end), recovery point) and nothing is
  /// changed: see repair. Errors: io_error, invalid_argument (bad config),
  /// corrupt_log.
  static result<partition_log> open(const std::string& dir, const log_config& config = {});

  /// Opens the log in `dir` as open does, continuing `prefix`: reads below
  /// prefix.end come from the earlier epochs' segments, the producer and
  /// transaction state starts from theirs, and a directory that does not
  /// exist (or holds no segment) is a log starting at prefix.end, created at
  /// the first write. The log never writes, truncates or re-indexes the
  /// prefix's files; retention and DeleteRecords may delete them. Errors:
  /// as open; corrupt_log when `dir`'s first segment starts below
  /// prefix.end.
  static result<partition_log> open_chained(const std::string& dir, const log_config& config,
                                            chain_prefix prefix);

  /// Opens the log in `dir` as open does, but cuts each damage open would
  /// refuse, until the log opens: the damaged segment is truncated at its
  /// first invalid batch (later sealed segments are kept); when that was the
  /// last segment, appends continue in a new segment at `end` (the recovery
  /// point or the end of any valid batch found past the damage, whichever is
  /// higher), so no offset that may have been acknowledged is given out
  /// again and the removed offsets stay a gap that reads skip. `report`
  /// receives every cut (event log.repaired for each). Errors: io_error,
  /// invalid_argument.
  static result<partition_log> repair(const std::string& dir, const log_config& config,
                                      repair_result& report);

  /// Creates a new, empty log in `dir` whose first offset is `start` (a moved
  /// partition starts at the source's log-start). Any segments already in
  /// `dir` are removed first. Errors: io_error, invalid_argument.
  static result<partition_log> create(const std::string& dir, offset start,
                                      const log_config& config = {});

  /// Deletes `dir` and everything in it (a destination discarding a partial
  /// copy). Missing `dir` is not an error.
  static status remove(const std::string& dir);

  partition_log(partition_log&&) = default;
  partition_log& operator=(partition_log&&) = default;
  partition_log(const partition_log&) = delete;
  partition_log& operator=(const partition_log&) = delete;
  ~partition_log() = default;

  /// Validates `batch` (exactly one v2 batch, CRC, records if uncompressed;
  /// with batch_check::verified the framing only, see batch_check),
  /// writes baseOffset = LEO into it in place and appends it, rolling the
  /// segment first when it would exceed segment.bytes. Returns the base
  /// offset. Not durable until flush(). An idempotent batch (producerId and
  /// baseSequence >= 0) is first judged by the producer state (see
  /// producer_state::check) and, when accepted, recorded in it; a
  /// transaction marker (make_control_batch) is judged by its epoch
  /// (producer_state::check_marker). Every appended batch is recorded in
  /// the transaction state (txn()). Clients' control batches are refused
  /// before they get here (kafka::validate_produce_records). Errors: the
  /// batch_view::parse errors, bad_length (trailing bytes), batch_too_large,
  /// io_error; duplicate_sequence (nothing appended; error::original is the
  /// first append's base offset), out_of_order_sequence,
  /// invalid_producer_epoch (a data batch or a marker of an older epoch).
  result<offset> append(std::string& batch, batch_check check = batch_check::full);

  /// Appends a batch whose offsets are already assigned (partition copy);
  /// its baseOffset must equal LEO, else base_offset_mismatch carrying the
  /// log bounds. One exception: into an empty log (as create or reset left
  /// it) a first batch that contains LEO is taken whole, the log then
  /// begins at its baseOffset and keeps its log start (stored as
  /// advance_log_start stores it): a move copies from the source's log
  /// start, which DeleteRecords may have put inside a batch. Returns the base offset. Idempotent batches are recorded in
  /// the producer state unjudged (the source judged them), so that state
  /// moves with the partition. Never held in memory (write-behind is for
  /// client appends, which a write-ahead log covers): written at once.
  result<offset> append_with_offsets(std::string_view batch);

  /// fdatasyncs everything appended so far (no-op when nothing is new) and
  /// returns the durable offset: every offset below it survives a crash.
  /// Then, when it advanced and checkpoint_interval_ms passed since the last
  /// write, records it as the recovery point (a failed checkpoint write is
  /// logged as checkpoint.write_failed, not an error: the older point stays
  /// true). Errors: io_error (the fdatasync failed).
  result<offset> flush();

  /// Starts writing the active segment's dirty pages to disk without
  /// waiting (active_segment::start_writeback): a move's destination calls
  /// it as the copy goes, so that the fsync before cutover finds little
  /// left to write, without stalling the copy on an fsync. Makes nothing
  /// durable. Errors: io_error (nothing is lost: the bytes stay dirty).
  status start_writeback();

  /// Offset below which everything is durable (cheap; for group commit: a
  /// caller waiting for offset X needs a flush only if X >= durable_offset()).
  offset durable_offset() const { return durable_; }

  /// Something appended, or the log's own files and directory, is not
  /// synced yet: flush() has work to do.
  /// Writes the bytes the active segment holds (log_config::
  /// write_behind_bytes) to its file; a sync of the file system covers an
  /// append only once they are written. Errors: io_error (the bytes stay
  /// held; a later call tries again).
  status write_out() { return active_.write_out(); }

  /// Bytes appended and held in memory, not yet in the segment file.
  size_t held_bytes() const { return active_.held_bytes(); }

  /// Changes log_config::write_behind_bytes for later appends (0: hold
  /// nothing more; what is held stays until write_out).
  void set_write_behind(size_t bytes) { config_.write_behind_bytes = bytes; }

  /// Changes log_config::segment_bytes (a topic's segment.bytes altered at
  /// runtime): the active segment rolls once it passes the new size, sealed
  /// segments stay as they are. 0 is ignored; capped like open's.
  void set_segment_bytes(uint64_t bytes);

  bool needs_sync() const { return dirty_ || unsynced_dir_; }

  /// Tells the log that a sync of its whole file system (syncfs(2), see
  /// sync_filesystem) which started after its last append returned
  /// successfully: everything appended is durable, as after flush(), and the
  /// recovery point is written under the same rule (without an fsync of its
  /// own: the next file-system sync makes it durable). Used by a group commit
  /// round over many partitions (docs/storage.md "Threads, group commit and
  /// file descriptors"). Returns the durable offset; error: the failure of
  /// an earlier sync (see failed()).
  result<offset> synced_by_filesystem();

  /// Bytes were appended since this log's own last fdatasync (a syncfs does
  /// not clear it): when a syncfs fails, these logs fdatasync themselves,
  /// so that a write-back error in their file is reported to them.
  bool written_since_fdatasync() const { return written_since_fdatasync_; }

  /// A sync of this log failed once: every later flush, sync or clean
  /// close fails with that error, since after a failed fsync the kernel may
  /// have dropped the pages and a later success proves nothing.
  bool failed() const { return failed_; }

  /// The file system (st_dev) the log's directory is on, for grouping logs
  /// by file system in a sync round.
  uint64_t device() const { return device_; }

  /// Writes the recovery point (= durable_offset()) now if it advanced since
  /// the last write; flush() does this itself at most every
  /// checkpoint_interval_ms. Errors: io_error (the old checkpoint stays,
  /// which is safe: it is only lower).
  status checkpoint();

  /// Clean close: flush(), then a checkpoint with the log end as recovery
  /// point and the clean flag, so the next open knows the file ends where
  /// this one left it (nothing is written when the checkpoint on disk
  /// already says so). The log stays usable; the next append clears the
  /// flag first. Errors: io_error.
  status close();

  /// Clean close for a caller that syncs the whole file system around it
  /// (a node stopping thousands of partitions): requires that a successful
  /// sync_filesystem covered every append (synced_by_filesystem was called
  /// after it), then replaces the checkpoint with the clean one without an
  /// fsync of its own; the caller syncs the file system again afterwards.
  /// A crash before that sync leaves the old checkpoint, or an unreadable
  /// one, never a clean flag over unsynced bytes. Errors: io_error.
  status close_synced();

  /// Closes the active segment's fd unless appends wait for a sync (the
  /// next use opens it again). Returns whether an fd was released.
  bool release_fd();
  /// Creates the directory and first segment file of a log opened without
  /// them (see open); nothing when they exist. Errors: io_error.
  status materialize();
  /// False while the log exists only in memory (see open).
  bool on_disk() const { return on_disk_; }
  /// Shared storage (epoch_chain.hpp continue_epoch): a chained log that
  /// never wrote a byte in its own directory (!on_disk()) goes on in `dir`
  /// instead, which must not exist: the chain it read, its producer and
  /// transaction state and its log end stay as they are; the first append
  /// creates `dir`, after `before_materialize` (log_config's hook; may be
  /// null). Errors: invalid_argument when the log is not chained or is on
  /// disk (nothing changes).
  status continue_in(const std::string& dir, std::function<status()> before_materialize);
  bool holds_fd() const { return active_.holds_fd(); }

  /// The recovery point on disk (every offset below it was fdatasynced).
  offset recovery_point() const { return checkpointed_; }

  /// Whole batches starting with the one containing `from`, up to
  /// `max_bytes` but at least one batch, from a single segment. `from` ==
  /// LEO gives no bytes; `from` inside a gap a repair left gives the first
  /// batch after it (none when nothing was appended after the gap). Errors: offset_out_of_range with log_start and
  /// log_end set when from < log-start or from > LEO; corrupt_segment; io_error.
  result<read_result> read(offset from, size_t max_bytes);

  /// Time lookup (Kafka ListOffsets with a timestamp, v1+): the earliest
  /// record at or after log-start whose timestamp is >= `target` (ms since
  /// epoch, >= 0), with that record's timestamp; nullopt when no record has
  /// one (the caller answers Kafka's UNKNOWN_OFFSET -1 / timestamp -1).
  /// Kafka's UnifiedLog.fetchOffsetByTimestamp + FileRecords.searchForTimestamp
  /// without a time index: segments whose largest timestamp is < `target`
  /// are skipped (sealed ones computed once by a header walk, then cached),
  /// then the candidate segment's batch headers are walked to the first
  /// batch whose maxTimestamp is >= `target` and its records searched (see
  /// find_timestamp_in_batch: LogAppendTime batches give every record the
  /// maxTimestamp; compressed batches answer their base offset). Cost: one
  /// header walk of the segments before the hit, at worst. Errors:
  /// invalid_argument (target < 0), corrupt_segment, io_error.
  result<std::optional<timestamp_offset>> offset_for_timestamp(int64_t target);

  /// Deletes the oldest sealed segments (never the active one) while
  /// (retention_bytes >= 0 and the log stays at or above retention_bytes
  /// without the segment) or (retention_ms >= 0 and the segment's largest
  /// timestamp is older than now_ms - retention_ms; file mtime when it has no
  /// timestamps), as Kafka's size and time retention do. Advances log-start.
  result<retention_result> apply_retention(int64_t retention_bytes, int64_t retention_ms,
                                           int64_t now_ms);

  /// Discards every record and restarts the log empty at `start` (and
  /// forgets every producer and any log-start offset DeleteRecords stored).
  /// A chained log (see chained()) refuses: invalid_argument.
  status reset(offset start);

  /// Kafka's DeleteRecords for this log (KIP-107,
  /// UnifiedLog.maybeIncrementLogStartOffset): moves the log-start offset up
  /// to `before` (offset{-1}: the log end), so that reads below it are
  /// offset_out_of_range and ListOffsets earliest answers it; sealed
  /// segments wholly below it are deleted at once, a segment (or batch)
  /// straddling it stays and reads of it still return its first batch
  /// whole. Durable before it returns: everything below `before` is
  /// fdatasynced first, then `<dir>/log-start` (recovery_point.hpp) is
  /// replaced atomically, and open restores it. Returns the log-start
  /// offset after the call: unchanged when `before` <= log_start().
  /// Errors: invalid_argument (`before` < -1), offset_out_of_range with the
  /// bounds set (`before` > log_end()), io_error.
  result<offset> advance_log_start(offset before);

  offset log_start() const { return log_start_; }
  offset log_end() const { return active_.next_offset(); }
  /// Bytes on disk: every segment's log and index files.
  uint64_t size_bytes() const;
  size_t segment_count() const { return closed_.size() + 1; }
  /// Idempotent producers remembered (rebuilt from the batch headers on open).
  const producer_state& producers() const { return producers_; }
  /// Forgets producers silent for producer_expiration_ms (Kafka's
  /// producer.id.expiration.ms), but not one with an open transaction (its
  /// epoch still fences); the partition calls it on its retention
  /// timer whether or not retention is configured.
  size_t expire_producers(int64_t now_ms) {
    return producers_.expire(now_ms, producer_expiration_ms,
                             [this](int64_t pid) { return txn_.open().count(pid) != 0; });
  }
  /// Open transactions and the aborted index (txn_state), recorded as
  /// producers() is: every append, every copied batch, rebuilt from the
  /// batch headers on open (after a recovery or repair cut too), cleared by
  /// reset, its aborted index trimmed as the log start advances.
  const txn_state& txn() const { return txn_; }
  /// The last stable offset with the log end as high watermark
  /// (txn_state::last_stable_offset), never below log_start(): an open
  /// transaction whose first batches retention removed holds it there.
  offset last_stable_offset() const {
    return std::max(log_start_, txn_.last_stable_offset(log_end()));
  }
  const std::string& dir() const { return dir_; }
  /// The log continues earlier owner epochs' segments (open_chained).
  bool chained() const { return chained_; }

 private:
  static result<partition_log> open_impl(const std::string& dir, const log_config& config, chain_prefix* prefix);
  const std::string& seg_dir(const closed_segment& seg) const { return seg.dir.empty() ? dir_ : seg.dir; }
  partition_log(std::string dir, log_config config, active_segment active);
  status sync_fresh_dir();

  result<offset> append_validated(std::string_view batch, offset base, offset last,
                                  int64_t max_timestamp, size_t hold_up_to);
  status roll();
  result<int64_t> closed_max_timestamp(closed_segment& seg);
  status write_checkpoint(offset point, bool clean, bool durable = true);
  status clear_clean_flag();
  /// After a successful sync of the data: the durable offset and the
  /// checkpoint rule shared by flush() and synced_by_filesystem(); the
  /// latter writes the checkpoint without fsyncs (the next file-system sync
  /// covers it; until then the old, lower point, or an unreadable file,
  /// stays on disk, both safe).
  offset after_sync(bool durable_checkpoint);
  /// The log-start offset the segments and `stored_log_start_` give: the
  /// larger of the first segment's base and the stored one, at most the
  /// log end.
  offset settled_log_start() const;
  /// Empty log only: moves its (empty) active segment down to `base`,
  /// keeping log_start() stored (see append_with_offsets).
  status start_below(offset base);

  std::string dir_;
  log_config config_;
  std::vector<closed_segment> closed_;  ///< sealed segments, oldest first
  active_segment active_;
  offset log_start_{0};
  offset stored_log_start_{0};  ///< the value of `<dir>/log-start` (0 when none)
  offset durable_{0};
  bool dirty_ = false;
  bool on_disk_ = true;        ///< false: opened without a directory, nothing created yet (see open)
  bool unsynced_dir_ = false;  ///< created by open without fsyncs (see open)
  bool unsynced_checkpoint_ = false;  ///< ... and its first checkpoint not written yet
  bool written_since_fdatasync_ = false;
  bool failed_ = false;  ///< a sync failed: see failed()
  bool chained_ = false;  ///< opened by open_chained: see chained()
  error failure_;
  uint64_t device_ = 0;
  producer_state producers_;
  txn_state txn_;
  offset checkpointed_{0};     ///< recovery point last written to disk
  bool clean_on_disk_ = false; ///< the checkpoint on disk carries the clean flag
  std::chrono::steady_clock::time_point checkpointed_at_ = std::chrono::steady_clock::now();
};

}  // namespace moonmq::storage
