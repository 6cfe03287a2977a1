#pragma once
// raft_store: the durable image of one raft node (persisted_state) in a
// directory, written synchronously: save() returns only after every byte it
// wrote is fsynced, so the caller may send the batch's messages afterwards.
//
// Files (all under `dir`):
//   raft-state.json     hard state {"term","vote","commit"}; write_file_atomic,
//                       rewritten only when the term or the vote changes
//   raft-commit         the commit index alone, written in place when only it
//                       advanced: two 32-byte slots used in turn, at bytes
//                       0 and 4096 (never in one sector), each
//                       "MQCI" | CRC-32 of bytes 8..31 (LE u32) | sequence
//                       (LE u64) | commit index (LE u64) | 8 zero bytes,
//                       then fdatasync (one flush, no rename: the common
//                       case of every committed entry)
//   raft-snapshot.json  snapshot JSON (raft/types.hpp); write_file_atomic
//   raft-log            one record per line: "<crc32 as 8 hex digits> <entry JSON>\n",
//                       CRC-32 (IEEE, as in zlib) over the JSON bytes.
// A plain append is appended + fsynced in place; a truncation or compaction
// rewrites the whole log with write_file_atomic.
//
// Recovery rule on open (never a silent reset):
//   - a directory without raft-state.json but with raft-log,
//     raft-snapshot.json or raft-commit -> errc::corrupt_state naming
//     raft-state.json;
//   - raft-state.json or raft-snapshot.json unreadable or not valid JSON of
//     their shape -> errc::corrupt_state naming the file;
//   - raft-log: records are read in order. Only the LAST record of the file
//     may be bad (no trailing newline, CRC mismatch): it is a torn append that
//     was never acknowledged (its save() never returned), so it is dropped and
//     the file rewritten without it. A bad record followed by any other byte,
//     a record whose CRC matches but whose JSON is not a valid entry, or
//     non-contiguous indexes -> errc::corrupt_state naming the file and the
//     byte offset;
//   - entries at or below the snapshot index are dropped (a crash between
//     writing the snapshot and rewriting the log); if the entry at the
//     snapshot index has another term, every entry is dropped (a crash during
//     a snapshot install), exactly as apply_ready() would have done;
//   - the commit index is the larger of raft-state.json's and the valid
//     raft-commit slot with the highest sequence. A slot whose CRC does not
//     match is a torn write whose save() never returned, so the other slot
//     (the commit before it) is exact; no valid slot -> raft-state.json's
//     value. The commit index only grows, so the larger of the two files is
//     the last one saved;
//   - the commit index is raised to the snapshot index if below it; a
//     commit index beyond the last entry -> errc::corrupt_state naming the
//     file it came from.

#include <string>

#include "raft/ready.hpp"
#include "raft/result.hpp"

namespace moonmq::raft {

class raft_store {
 public:
  /// Opens or creates the store in `dir` (created if missing; a fresh store
  /// writes raft-state.json at once). Errors: errc::io_error,
  /// errc::corrupt_state (see the recovery rule above; message names the file).
  static result<raft_store> open(const std::string& dir);

  /// The durable image as of the last successful save() (what raft_core::open() takes).
  const persisted_state& state() const { return state_; }

  /// Persists the durable part of `rd` (apply_ready order: snapshot, log,
  /// hard state) and fsyncs. On error (errc::io_error naming the file) the
  /// on-disk image is a valid earlier-or-later state; the caller must stop
  /// and reopen rather than continue.
  status save(const ready_batch& rd);

  const std::string& dir() const { return dir_; }

  // File names inside dir().
  static constexpr const char* state_file = "raft-state.json";
  static constexpr const char* snapshot_file = "raft-snapshot.json";
  static constexpr const char* log_file = "raft-log";
  static constexpr const char* commit_file = "raft-commit";

 private:
  explicit raft_store(std::string dir) : dir_(std::move(dir)) {}
  std::string path(const char* file) const { return dir_ + "/" + file; }
  status rewrite_log();
  status append_log(const std::vector<log_entry>& entries);
  status write_commit(log_index commit);

  std::string dir_;
  persisted_state state_;
  uint64_t commit_seq_ = 0;  ///< sequence of the last raft-commit slot written (0 = none)
  bool commit_dir_synced_ = false;  ///< the directory was fsynced after raft-commit was written
};

/// CRC-32 (IEEE 802.3 polynomial, as zlib's crc32) of `data`.
uint32_t crc32(const std::string& data);
/// One raft-log record for `e`: "<crc32 hex8> <json>\n".
std::string encode_log_record(const log_entry& e);

}  // namespace moonmq::raft
