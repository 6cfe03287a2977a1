#pragma once
// The write-ahead log of an I/O worker (docs/storage.md "Write-ahead log"):
// every batch a worker appends to a partition for a client is also added to
// the worker's WAL, and a group commit round makes the round's appends
// durable with one sequential write and one fdatasync of the WAL instead of
// a sync of every partition's segment. The segments are synced later, many
// rounds at once (a WAL checkpoint: one syncfs), and the WAL files older
// than that sync are deleted. At start, before any partition opens,
// replay_wal appends to each partition what its segments lost and the WAL
// holds. This is AutoMQ's WAL (one sequential write per commit, the data
// stored again in the partition's own files later), on a local disk.
//
// File `<data_dir>/.wal/<worker>-<seq>.wal` (seq: 20 decimal digits):
//   header: 8 bytes "MOONWAL2" (written now) or "MOONWAL1" (read only)
//   entries, each: uint32 BE length L of what follows the CRC,
//                  uint32 BE ~L (a damaged length is never taken for a
//                  write a crash cut short),
//                  uint32 BE CRC32C: MOONWAL2, of the topic length, topic,
//                  partition and the batch's first 21 bytes (baseOffset,
//                  batchLength, partitionLeaderEpoch, magic, crc), the
//                  batch's own CRC32C covering the rest of it; MOONWAL1, of
//                  all L bytes,
//                  uint16 BE topic length, topic bytes,
//                  int32 BE partition,
//                  one v2 record batch with its offsets assigned.
// docs/storage.md "CRC32C: once per batch" says why MOONWAL2 is as safe.
// Entries of one partition are in the order they were appended; one worker
// holds each partition for the whole run, so no two files of a run hold the
// same partition's entries.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "storage/file_io.hpp"
#include "storage/types.hpp"

namespace moonmq::storage {

/// `<data_dir>/.wal`: a topic name cannot end up there (partition
/// directories end in "-<partition>").
std::string wal_dir(const std::string& data_dir);

/// One entry: a batch appended to `topic`-`partition`.
struct wal_entry {
  std::string topic;
  int32_t partition = 0;
  std::string batch;
};

/// Entry formats, named by a file's 8-byte header.
enum class wal_format : uint8_t {
  v1 = 1,  ///< "MOONWAL1": the entry CRC covers every byte after it (earlier builds wrote it)
  v2 = 2,  ///< "MOONWAL2": the entry CRC covers the entry's header and the batch's first 21 bytes
};

/// The 8-byte file header of `format` ("MOONWAL1", "MOONWAL2").
std::string_view wal_header(wal_format format);

/// Appends one entry of `format` to `out`. For v2, `batch` must be a valid
/// v2 batch (its crc field right for its bytes from 21 on, as every
/// appended batch's is): the entry's CRC leaves those bytes to it.
void encode_wal_entry(std::string& out, std::string_view topic, int32_t partition, std::string_view batch,
                      wal_format format = wal_format::v2);

/// What decode_wal found in one file's bytes.
struct wal_scan {
  std::vector<wal_entry> entries;  ///< every valid entry, in file order, up to the first invalid one
  uint64_t valid_bytes = 0;        ///< end of the last valid entry (the header's end when none)
  /// Bytes past valid_bytes that a write cut short by a crash explains: an
  /// entry whose length runs past the end of the file, or only zero bytes.
  bool torn_tail = false;
  /// Bytes past valid_bytes that no torn write explains (a bad CRC or a
  /// malformed entry with more bytes after it): data the WAL had synced
  /// may be unreadable there.
  bool damaged = false;
  std::string reason;  ///< why the bytes at valid_bytes are invalid (empty when the file ends there)
};

/// Decodes a whole WAL file of either format. In a v2 file an entry is
/// valid only when its batch's batchLength fills the entry and its CRC32C
/// matches too. A file without a known header is damaged at 0.
wal_scan decode_wal(std::string_view bytes);

/// Appends entries to the current WAL file of one worker. Single-threaded.
class wal_writer {
 public:
  /// Creates `wal_dir(data_dir)` if needed and a new file for `worker`
  /// numbered after any file of that worker already there (replay_wal
  /// normally left none), durably (file and directory fsynced). Errors:
  /// io_error.
  static result<wal_writer> open(const std::string& data_dir, int worker);

  wal_writer(wal_writer&&) = default;
  wal_writer& operator=(wal_writer&&) = default;

  /// Adds an entry to the next commit (memory only).
  void add(std::string_view topic, int32_t partition, std::string_view batch) {
    encode_wal_entry(buffer_, topic, partition, batch);
  }
  bool pending() const { return !buffer_.empty(); }
  /// Bytes added since the last commit.
  size_t buffered_bytes() const { return buffer_.size(); }

  /// Writes every added entry at the file's end with one pwrite, then
  /// fdatasyncs the file: when it returns ok, every entry added so far
  /// survives a crash. Errors: io_error (the file must not be trusted for
  /// later commits: the kernel may have dropped its pages).
  /// The same as begin_commit, run_commit and end_commit in a row.
  status commit();

  /// A commit's write and sync, to run on another thread while the owner
  /// goes on adding entries (a pipelined group commit: the next round's
  /// appends are taken while this round's fdatasync runs). `bytes` and
  /// `path` stay valid and unchanged until end_commit.
  struct commit_job {
    int fd = -1;
    uint64_t offset = 0;  ///< the file's committed end
    const std::string* bytes = nullptr;
    const std::string* path = nullptr;
  };
  /// Takes every entry added so far into a commit; entries added after
  /// this call go to the next one. At most one commit may be under way:
  /// call end_commit before the next begin_commit, restart or
  /// remove_all (which refuse with invalid_argument meanwhile), and do not
  /// move the writer meanwhile.
  commit_job begin_commit();
  /// One pwrite of the job's bytes at its offset, then one fdatasync.
  /// Touches no writer state, so it may run on any thread. Errors:
  /// io_error, as commit's.
  static status run_commit(const commit_job& job);
  /// Ends the commit begin_commit started with run_commit's result: on
  /// success the file's committed end moves past its bytes.
  void end_commit(const status& result);
  /// A commit was begun and not ended.
  bool committing() const { return committing_; }

  /// Bytes of the current file (header included), committed only.
  uint64_t file_bytes() const { return file_bytes_; }

  /// Starts a new file and deletes every older file of this worker; entries
  /// added but not committed are dropped. Call only when every batch those
  /// files and entries hold is durable in its partition's segments (a
  /// successful syncfs after their appends). Errors: io_error (the older
  /// files may remain; they replay harmlessly while the segments hold their
  /// batches).
  status restart();

  /// Deletes every file of this worker (a clean close made every partition
  /// durable). Errors: io_error.
  status remove_all();

  const std::string& path() const { return path_; }

 private:
  wal_writer() = default;
  status start_file();

  std::string dir_;
  int worker_ = 0;
  uint64_t seq_ = 0;
  std::string path_;
  unique_fd fd_;
  uint64_t file_bytes_ = 0;
  std::string buffer_;
  /// The bytes of the commit under way (begin_commit to end_commit), kept
  /// with their capacity for the next one: a fresh buffer per commit
  /// would fault its pages in again every round.
  std::string committing_bytes_;
  bool committing_ = false;
  std::vector<std::string> older_;  ///< earlier files of this worker, deleted by restart
};

/// Notes durably (`<data_dir>/.wal/dropped/<topic>-<partition>`) that the
/// partition's entries in the WAL files there now must never be replayed:
/// its log is about to be deleted or reset while a stopped WAL keeps those
/// files. replay_wal honours and then removes the notes. Errors: io_error.
status drop_wal_entries(const std::string& data_dir, const std::string& topic, int32_t partition);

/// What replay_wal did.
struct wal_replay_report {
  size_t files = 0;
  size_t entries = 0;          ///< valid entries read
  size_t batches_applied = 0;  ///< batches a partition's segments had lost, appended again
  size_t partitions = 0;       ///< partitions the files named
  uint64_t bytes = 0;          ///< bytes of the files
  /// Every problem met, each also logged at error level: a damaged file, a
  /// partition that did not open (corrupt: it stays offline until the
  /// operator's repair, which continues above the entries' offsets; the
  /// entries stay in the retained files), an entry that does not continue
  /// its partition's log.
  std::vector<std::string> problems;
  /// Directory the files were moved to instead of deleted, when there was
  /// a problem ("" otherwise): nothing the WAL held is deleted unapplied.
  std::string retained_in;
};

/// Replays `wal_dir(data_dir)` into the partition logs of `data_dir`, before
/// any of them is opened by a worker: for each partition named, its log is
/// opened (and recovered); each batch ending below its log end is already
/// there and skipped, a batch starting at its log end is appended with its
/// offsets, and every log touched is then closed cleanly together
/// (close_together: a syncfs, clean checkpoints, a syncfs). A partition
/// left short of its entries' end (a gap, a log that opens corrupt) gets
/// its recovery point raised to that end, so it opens offline and a repair
/// never gives those acknowledged offsets out again. Entries of partitions
/// noted by drop_wal_entries are skipped. Then the files
/// are deleted, or, when anything could not be applied, moved to
/// `<wal_dir>/retained-<ms since epoch>/` for the operator. Never throws;
/// problems are reported, and the broker starts.
wal_replay_report replay_wal(const std::string& data_dir);

}  // namespace moonmq::storage
