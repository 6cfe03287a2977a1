#pragma once
// One segment of a partition log: `<base>.log` (concatenated v2 batches) and
// `<base>.index` (sparse offset index), where <base> is the base offset as 20
// zero-padded decimal digits (Kafka's file naming).
//
// Index entries are 8 bytes, big-endian: relative offset u32 (batch base
// offset - segment base) then file position u32 of that batch. One entry is
// added when at least `index_interval_bytes` were appended since the last
// entry (Kafka's index.interval.bytes, default 4096). Positions fit u32
// because segments are capped at 2 GiB.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "storage/file_io.hpp"
#include "storage/record_batch.hpp"
#include "storage/types.hpp"

namespace moonmq::storage {

/// Largest segment in bytes: index positions are u32 and records stay below 2 GiB.
inline constexpr uint64_t max_segment_bytes = uint64_t{1} << 31;

struct index_entry {
  uint32_t relative_offset = 0;
  uint32_t position = 0;
};

/// "00000000000000000042.log" / ".index" for base 42.
std::string segment_log_name(offset base);
std::string segment_index_name(offset base);

/// Base offset of a segment log file name ("<20 digits>.log"), else nullopt.
std::optional<offset> parse_segment_log_name(std::string_view file_name);

/// Serialises index entries (8 bytes each, big-endian).
std::string encode_index(const std::vector<index_entry>& entries);

/// Parses an index file and checks it against a log of `log_size` bytes:
/// size multiple of 8, strictly increasing relative offsets and positions,
/// every position < log_size. nullopt means torn or stale (rebuild it).
std::optional<std::vector<index_entry>> decode_index(std::string_view bytes, uint64_t log_size);

/// Outcome of a full scan of a segment file.
struct segment_scan {
  uint64_t valid_bytes = 0;       ///< end of the last valid batch
  offset next_offset{0};          ///< last valid offset + 1, or the base if none
  int64_t max_timestamp = -1;     ///< largest batch maxTimestamp, -1 if none
  std::vector<index_entry> index; ///< rebuilt sparse index of the valid prefix
  std::optional<error> stopped;   ///< why the scan ended before `file_size`
  /// The scan stopped at a final batch that runs past the end of the file
  /// (fewer than 12 bytes left, or a length field, in a header that parses
  /// or is cut short, claiming more bytes than remain): a write that never
  /// completed, not damage to complete bytes.
  bool incomplete = false;
};

/// Scans `fd` from position 0, fully validating each batch (framing, CRC,
/// records) and requiring contiguous offsets starting at `base`; stops at the
/// first invalid or incomplete batch. Errors only on I/O failure.
result<segment_scan> scan_segment(int fd, const std::string& path, offset base,
                                  uint64_t file_size, size_t index_interval_bytes);

/// The end (last offset + 1) of the last batch found anywhere after byte
/// `from_pos` of the segment log at `path` that is whole and valid (full
/// validation) with baseOffset >= `min_offset`, or `min_offset` when there is
/// none: how far a log went past damage at `from_pos`. Tries every byte
/// position (cheap header checks first); used only on damaged segments.
/// Errors: io_error.
result<offset> scan_past_damage(const std::string& path, uint64_t from_pos, offset min_offset);

/// Reads whole batches of the segment in `fd` (of `size` bytes), starting
/// with the batch that contains `target` (walking headers from `start_pos`,
/// which must be a batch boundary at or before it), up to `max_bytes` but at
/// least one batch. Errors: corrupt_segment (headers do not parse),
/// offset_out_of_range (target not in the segment), io_error.
result<std::string> read_segment(int fd, const std::string& path, uint64_t size,
                                 uint64_t start_pos, offset target, size_t max_bytes);

/// The segment being appended to: the log file's fd, opened on use and
/// released by its owner when idle (release_fd: the fd budget of
/// docs/storage.md "File descriptors"), and the sparse index held in memory;
/// the index file is written when the segment is sealed (and rebuilt by
/// scanning on every open, so it never needs syncing before that).
class active_segment {
 public:
  /// Creates empty `<base>.log` in `dir` (truncating a stale file). The
  /// caller fsyncs the directory.
  static result<active_segment> create(const std::string& dir, offset base,
                                       size_t index_interval_bytes);

  /// An empty segment at `base` whose file does not exist yet: nothing is
  /// touched on disk. Only its numbers may be read; the owner replaces it
  /// with create() before anything is written (partition_log::materialize).
  static active_segment planned(const std::string& dir, offset base, size_t index_interval_bytes);

  /// Opens the existing `<base>.log` and scans it. When the scan stops
  /// before the end of the file, `may_cut(scan)` decides: true truncates the
  /// file (durably) at the first invalid batch, false fails with
  /// corrupt_log (error::damaged: path, position, first offset, reason; the
  /// file is untouched). `stop_reason` and `truncated_bytes` receive the
  /// scan stop reason and the bytes cut. The valid bytes are fsynced. Errors:
  /// io_error, corrupt_log.
  static result<active_segment> recover(const std::string& dir, offset base,
                                        size_t index_interval_bytes,
                                        const std::function<bool(const segment_scan&)>& may_cut,
                                        std::optional<error>& stop_reason,
                                        uint64_t& truncated_bytes);

  /// The held bytes reach the file (best effort), as if appended without
  /// holding: dropping a segment loses nothing a process crash would keep.
  ~active_segment();
  active_segment(active_segment&&) = default;
  /// Writes this segment's held bytes (best effort) before it takes `o`'s
  /// place.
  active_segment& operator=(active_segment&& o) noexcept;

  /// Appends one encoded batch covering offsets [first, last]. With
  /// `hold_up_to` > 0 the bytes may stay in memory (write-behind) until
  /// `hold_up_to` bytes are held or write_out runs (sync, seal and read
  /// call it first, and so does the destructor), so that many small
  /// appends reach the file in one pwrite; 0 writes them at once. Errors:
  /// io_error (nothing of this batch was appended).
  status append(std::string_view batch, offset first, offset last, int64_t max_timestamp,
                size_t hold_up_to = 0);

  /// Writes the held bytes at the end of the file (one pwrite). Errors:
  /// io_error; the file is cut back to what was written before and the
  /// bytes stay held, so a later call can try again.
  status write_out();

  /// Bytes appended but not yet written to the file.
  size_t held_bytes() const { return held_.bytes.size(); }

  /// Forgets the held bytes without writing them: the log is being
  /// discarded (partition_log::reset), and its file may be truncated and
  /// written again under the same name.
  void discard_held() { std::string().swap(held_.bytes); }

  /// write_out, then fdatasync of the log file.
  status sync();

  /// write_out, then starts the writeback of the file's dirty pages without
  /// waiting for it (sync_file_range(2) SYNC_FILE_RANGE_WRITE). Durability
  /// still needs sync(); this only keeps a later sync short. Errors:
  /// io_error.
  status start_writeback();

  /// Makes the segment immutable: writes out held bytes, fsyncs the log and writes `<base>.index`
  /// atomically. The fd stays open until the object goes, so a failed roll
  /// after it leaves the segment usable.
  status seal();

  /// See read_segment; uses the in-memory index.
  result<std::string> read(offset target, size_t max_bytes);

  /// Closes the log file's fd; the next append, sync, seal or read opens it
  /// again (O_RDWR: the file must still exist). Call only when everything
  /// appended was synced (partition_log::release_fd checks): a later
  /// fdatasync through a new fd still syncs the file's pages and reports a
  /// write-back error nobody reported yet, but not one an earlier
  /// fdatasync already reported.
  void release_fd() { fd_.reset(); }
  bool holds_fd() const { return fd_.valid(); }

  offset base() const { return base_; }
  offset next_offset() const { return next_; }
  uint64_t size() const { return size_; }
  uint64_t index_bytes() const { return index_.size() * 8; }
  int64_t max_timestamp() const { return max_timestamp_; }
  const std::string& path() const { return path_; }

 private:
  active_segment() = default;
  status ensure_open();
  void write_out_quietly();
  /// pwrite of `bytes` at written_ (the fd is open); on failure the file is
  /// cut back to written_, so it ends at a batch boundary. Errors: io_error.
  status write_at_end(std::string_view bytes);

  /// Bytes held by write-behind; a moved-from holder is left empty, so only
  /// one segment object ever writes them.
  struct held {
    std::string bytes;
    held() = default;
    held(held&& o) noexcept : bytes(std::move(o.bytes)) { o.bytes.clear(); }
    held& operator=(held&& o) noexcept {
      bytes = std::move(o.bytes);
      o.bytes.clear();
      return *this;
    }
  };

  std::string dir_;
  std::string path_;
  unique_fd fd_;
  offset base_{0};
  offset next_{0};
  uint64_t size_ = 0;     ///< bytes appended: written_ + held bytes
  uint64_t written_ = 0;  ///< bytes in the file
  held held_;
  uint64_t bytes_since_index_ = 0;
  size_t index_interval_ = 4096;
  int64_t max_timestamp_ = -1;
  std::vector<index_entry> index_;
};

/// A sealed segment, kept as a few numbers; files are opened per read.
struct closed_segment {
  offset base{0};
  uint64_t size = 0;           ///< log file bytes (a foreign segment: the bytes it serves, see `dir`)
  uint64_t index_bytes = 0;    ///< index file bytes (0 for a foreign segment)
  int64_t max_timestamp = -2;  ///< -2 = not computed yet, -1 = no timestamps
  /// Empty: the segment is in the log's own directory. Otherwise the
  /// directory of a segment an earlier owner epoch wrote (shared storage,
  /// epoch_chain.hpp): the log reads it only up to `size` bytes (its epoch
  /// ends there, whatever the file holds past it), never writes it, and
  /// retention may delete it.
  std::string dir;
  /// A foreign segment's sparse index, built when the chain was read: its
  /// index file may be missing (written at seal) or name batches past `size`.
  std::shared_ptr<const std::vector<index_entry>> memory_index;
};

/// Opens a sealed segment's files, reads as read_segment does, closes them.
/// A missing or stale index falls back to a scan from position 0.
result<std::string> read_closed_segment(const std::string& dir, const closed_segment& seg,
                                        offset target, size_t max_bytes);

/// Checks `<base>.index` of a sealed segment against its log; rebuilds and
/// atomically rewrites it when missing or torn (returns true then). Fills
/// `seg.size` and `seg.index_bytes`. When the rebuild scan stops before the
/// end of the log (a sealed segment was fsynced, so that is damage), nothing
/// is written and the result is corrupt_log with error::damaged (path,
/// position, first offset, reason; `end` and the recovery point are left to
/// the caller). Errors: io_error, corrupt_log.
result<bool> check_closed_segment(const std::string& dir, closed_segment& seg,
                                  size_t index_interval_bytes);

/// A corrupt_log error for damage at `position` of `path` where offset
/// `first` was expected; the message names the file, position and reason.
error damage_error(const std::string& path, uint64_t position, offset first, const error& why);

/// Walks the batch headers (no CRC) of the segment log at `path`, `size`
/// bytes long, from position 0, calling `visit(header, position)` for each
/// (a control batch's header carries its control_type)
/// batch until it returns false. A header that does not parse or runs past
/// `size` ends the walk quietly (a corrupt tail: the valid prefix decides).
/// Errors: io_error; corrupt_segment when the file is shorter than `size`.
status walk_segment_headers(const std::string& path, uint64_t size,
                            const std::function<bool(const batch_header_info&, uint64_t)>& visit);

/// Largest maxTimestamp over the batch headers of a sealed segment (header
/// walk, no CRC), or -1 when no batch carries a timestamp.
result<int64_t> closed_segment_max_timestamp(const std::string& dir, const closed_segment& seg);

/// The first record of the segment log at `path` (`size` bytes) whose offset
/// is >= `min_offset` and whose timestamp is >= `target`, or nullopt: Kafka's
/// FileRecords.searchForTimestamp without a time index. Walks the batch
/// headers (walk_segment_headers), skips batches whose maxTimestamp <
/// `target`, and reads each other batch whole (CRC checked) for
/// find_timestamp_in_batch, stopping at the first hit. Errors: io_error;
/// corrupt_segment (a candidate batch fails to parse or decode).
result<std::optional<timestamp_offset>> find_offset_by_timestamp(const std::string& path,
                                                                 uint64_t size, int64_t target,
                                                                 offset min_offset);

}  // namespace moonmq::storage
