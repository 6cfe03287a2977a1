#pragma once
// Shared storage (docs/shared-storage.md): one partition on a directory
// every broker mounts, written by one owner epoch at a time.
//
//   <root>/e<epoch, 20 digits>/     an ordinary partition log (partition_log),
//                                   written only by the owner of that epoch
//   <root>/epochs/<epoch, 20 digits> its takeover record: the offset at which
//                                   the epoch starts, written (durably) before
//                                   the epoch's first byte
//
// The chain of takeover records, in epoch order, is the partition: epoch X
// serves offsets from its start up to the next record's start. Bytes an
// earlier epoch's directory holds past that point (a stopped owner that
// woke up and kept appending, or a torn tail) are never read. A directory
// without a record holds nothing (its record is written first).

#include <cstdint>
#include <string>
#include <vector>

#include "storage/partition_log.hpp"
#include "storage/types.hpp"

namespace moonmq::storage {

/// `<root>/e<epoch, 20 digits>`: the log the owner of `epoch` writes.
std::string epoch_log_dir(const std::string& root, uint64_t epoch);

/// `<root>/epochs/<epoch, 20 digits>`: the takeover record of `epoch`.
std::string takeover_record_path(const std::string& root, uint64_t epoch);

/// One takeover record: epoch `epoch` holds the partition from `start` on.
struct takeover_record {
  uint64_t epoch = 0;
  offset start{0};
};

/// The record file's line, sealed like the recovery point:
///   "moonmq-takeover v1 epoch=<decimal> start_offset=<decimal> crc32c=<8 hex>\n".
std::string encode_takeover_record(const takeover_record& r);
/// nullopt when the line does not decode.
std::optional<takeover_record> decode_takeover_record(std::string_view text);

/// Every takeover record under `<root>/epochs/` of an epoch at or above
/// `from_epoch`, epoch ascending (none when the directory does not exist;
/// the others are not read). Leftover `*.tmp` files are ignored.
/// Errors: io_error; corrupt_log when a record does not decode or names
/// another epoch than its file (its writer replaced it atomically, so that
/// is damage: the chain cannot be read past it).
result<std::vector<takeover_record>> read_takeover_records(const std::string& root, uint64_t from_epoch = 0);

/// Writes the takeover record of `r.epoch` atomically (temp file synced,
/// then renamed): with `durable`, also fsyncs `<root>/epochs` (and, once
/// per process, `<root>` and its parent); without, sync_takeover_record
/// must run before the epoch's first byte (open_epoch and continue_epoch
/// make it their log's before_materialize). Errors: io_error.
status write_takeover_record(const std::string& root, const takeover_record& r, bool durable = true);

/// Makes a record written with durable=false durable: fsync of
/// `<root>/epochs` (and of `<root>` and its parent once per process).
/// Errors: io_error (also when the record is gone).
status sync_takeover_record(const std::string& root, uint64_t epoch);

/// What open_epoch found.
struct epoch_open_info {
  bool took_over = false;         ///< false: the epoch's record already existed (this owner reopened it)
  offset start{0};                ///< the epoch's start: T, the end of the earlier epochs
  uint64_t previous_epoch = 0;    ///< the newest earlier epoch with a record, 0 when none
  uint64_t cut_bytes = 0;         ///< bytes the previous epoch's last segment holds past T (ignored, never removed)
  size_t prior_segments = 0;      ///< earlier epochs' segments the log reads
};

/// Opens partition `root` for writing as the owner of `epoch` (>= 1), as
/// docs/shared-storage.md "One writer per epoch" says:
///
/// - A record of a later epoch exists: epoch_over (the partition moved on;
///   this broker must not write). Nothing is written.
/// - The epoch's record exists (a restart of its owner): the log in
///   `e<epoch>/` is recovered as partition_log::open does, continuing the
///   earlier epochs up to the record's start.
/// - Otherwise this is a takeover. The newest earlier epoch's log is read
///   read-only, never truncated, re-indexed or checkpointed (its owner may
///   be stopped, not dead): its sealed segments' batch headers are walked,
///   its last segment is validated batch by batch (CRC), and T is the end
///   of its valid data. An invalid batch past its recovery point (or, with
///   no readable checkpoint, one that runs past the end of the file) is a
///   torn tail: T stops before it and its bytes stay. Any other invalid
///   batch is corrupt_log with error::damaged, as local recovery reports it
///   (docs/storage.md "Recovery"), and nothing is written: a takeover never
///   cuts acknowledged data. Then the record (epoch, T) is written, before
///   `e<epoch>/` exists. With no earlier record the epoch starts at 0 and
///   its record is written when the log is first materialized (a partition
///   that is never written costs no file).
///
/// Cost: one walk of the batch headers of every earlier epoch's segments
/// (the producer and transaction state and the segments' sparse indexes,
/// held in memory: 8 bytes per index interval) and one CRC pass over the
/// previous epoch's last segment. Errors: invalid_argument (epoch 0),
/// epoch_over, corrupt_log, io_error.
result<partition_log> open_epoch(const std::string& root, uint64_t epoch, const log_config& config,
                                 epoch_open_info* info = nullptr);

/// Shared storage: `lg`, opened at epoch `from` by open_epoch and never
/// written there (!lg.on_disk(): a move's destination, sealed since its
/// takeover), goes on as epoch `to` of the same owner without reading the
/// chain again. `to`'s takeover record is written at lg.log_end() (the end
/// of `from`, which holds nothing) and the log's directory becomes
/// e<to>/; the chain, producer and transaction state in memory are those
/// `to` would read. Cost: one listing of `<root>/epochs` and the record's
/// durable write, whatever the partition's size (open_epoch walks every
/// earlier segment). Errors (nothing changed; open `to` with open_epoch
/// instead, or not at all): invalid_argument (`to` <= `from`, or the log
/// is on disk or not chained), epoch_over (a record above `from` exists:
/// another owner took over), corrupt_log, io_error.
status continue_epoch(const std::string& root, partition_log& lg, uint64_t from, uint64_t to,
                      epoch_open_info* info = nullptr);

}  // namespace moonmq::storage
