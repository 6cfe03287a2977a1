#pragma once
// The partition actor and the I/O workers that hold partition logs.
//
// A partition actor is a cooperative actor that owns no thread and no file:
// it forwards each request to its I/O worker (caf delegate, so the worker
// answers the requester directly). An I/O worker is one detached actor (one
// thread) that holds the logs (storage::partition_log) of every partition
// assigned to it, so a broker with 20,000 partitions runs a fixed, small
// number of threads (docs/storage.md "Threads, group commit and file
// descriptors"). Partitions are assigned to workers by a hash of topic and
// partition.
//
// Group commit across partitions: an append with acks=leader is written at
// once and its reply held; the worker then mails itself one flush message,
// and every append of any of its partitions queued ahead of that message
// shares the same sync round: one fdatasync when a single partition waits,
// one syncfs(2) of the data directory's file system when several do.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/atoms.hpp"
#include "actors/registry.hpp"
#include "dataplane/topic_catalog.hpp"

namespace moonmq::cluster {
class takeover_hold;  // cluster/takeover_hold.hpp
}

namespace moonmq {

class owner_view;  // actors/image.hpp

using partition_actor = caf::typed_actor<
  // Appends one v2 batch (base offset assigned here). `durable` = acks=leader:
  // reply after fsync. Replies with the base offset; errors: invalid_request
  // (bad batch), storage_error, partition_offline.
  caf::replies_to<append_atom, std::string, bool>::with<int64_t>,
  // Appends whole batches that already carry their offsets (a partition
  // copy); the first must start at the log end. `durable`: fsync everything
  // appended so far before the reply (an empty list with true is a flush).
  // Replies the new log end; errors: invalid_request (offset gap or bad batch).
  caf::replies_to<copy_atom, std::string, bool>::with<int64_t>,
  // The same at exactly `expected` (a move's copy, whose source keeps
  // several appends in flight): applied when `expected` is the log end;
  // held until it is when it lies ahead (up to 16 held; an empty list
  // never waits); otherwise offset_out_of_range carrying the bounds.
  // Held lists are refused when the log is reset, unsealed or closed.
  caf::replies_to<copy_atom, int64_t, std::string, bool>::with<int64_t>,
  // Discards every record and restarts the log empty at `start` (a move's
  // destination, or discarding a partial copy). Replies the new log end.
  caf::replies_to<reset_atom, int64_t>::with<int64_t>,
  // Seals (true) or unseals the partition: a sealed partition refuses
  // produce with partition_moved and keeps serving reads. Replies the log end.
  caf::replies_to<seal_atom, bool>::with<int64_t>,
  // The same; `durable` (a move's destination copy) keeps the seal across a
  // restart (the marker `<dir>/sealed`, fsynced) until an unseal removes it.
  // Errors: storage_error when the marker cannot be written or removed.
  caf::replies_to<seal_atom, bool, bool>::with<int64_t>,
  // Whole batches from `offset`, up to `max_bytes` but at least one batch.
  // Replies (batches, log_start, log_end); error offset_out_of_range with bounds.
  caf::replies_to<read_atom, int64_t, int32_t>::with<std::string, int64_t, int64_t>,
  // The same; `fetch` false = not client traffic (a move's copy), so the
  // partition's fetch counters, and its NW_OUT load, leave it out.
  caf::replies_to<read_atom, int64_t, int32_t, bool>::with<std::string, int64_t, int64_t>,
  // A read with an isolation level (Kafka Fetch v4+, the HTTP read's
  // `isolation`): (from, max_bytes, fetch, committed). Replies (batches,
  // log_start, high_watermark, last_stable_offset, aborted): the high
  // watermark is the log end, the last stable offset (LSO) the first offset
  // of the oldest open transaction, or the high watermark when none is open
  // (never above it, never below the log start). `committed`
  // (read_committed) returns only whole batches below the LSO (none when
  // `from` >= LSO) and `aborted` lists the aborted transactions overlapping
  // [from, last offset returned] as flattened pairs [producer_id,
  // first_offset, ...] (storage::txn_state::aborted_between); with
  // `committed` false the batches are those of the three-element read and
  // `aborted` is empty. Errors as the three-element read.
  caf::replies_to<read_atom, int64_t, int32_t, bool, bool>::with<std::string, int64_t, int64_t, int64_t,
                                                                 std::vector<int64_t>>,
  // (log_start, high_watermark, last_stable_offset): ListOffsets LATEST
  // with read_committed answers the LSO. Errors: partition_offline.
  caf::replies_to<lso_atom>::with<int64_t, int64_t, int64_t>,
  // Writes a transaction marker (KIP-98 WriteTxnMarkers on this partition):
  // (producer_id, producer_epoch, commit, coordinator_epoch) appends a
  // COMMIT (true) or ABORT control batch (storage::make_control_batch)
  // and replies its offset once it is durable (as an acks=leader append:
  // group commit round, WAL). The marker closes the producer's open
  // transaction (an ABORT adds it to the aborted index; with none open it
  // is written and records nothing) and sets the producer's epoch. Errors:
  // invalid_producer_epoch (an epoch older than the partition knows for
  // the producer; nothing written), partition_moved (sealed for a move:
  // retry at the new owner), partition_offline, storage_error,
  // invalid_request (producer_id < 0).
  caf::replies_to<marker_atom, int64_t, int16_t, bool, int32_t>::with<int64_t>,
  // (log_start, log_end, size_bytes).
  caf::replies_to<bounds_atom>::with<int64_t, int64_t, int64_t>,
  // Time lookup (ListOffsets by timestamp, see partition_log::
  // offset_for_timestamp): (offset, timestamp) of the earliest record whose
  // timestamp is >= `timestamp`, or (-1, -1) when none has one; with
  // `committed` (read_committed) also (-1, -1) when that record is at or
  // past the last stable offset. Errors: invalid_request (negative
  // timestamp), storage_error, partition_offline.
  caf::replies_to<time_lookup_atom, int64_t, bool>::with<int64_t, int64_t>,
  // Deletes the partition (its topic was deleted): appends still waiting
  // for their fsync are answered unknown_topic (never acknowledged), the log
  // is closed and its directory removed, and the actor exits. Replies true;
  // error storage_error when the directory cannot be removed (the actor
  // exits all the same).
  caf::replies_to<delete_atom>::with<bool>,
  // Repairs a log that open refused as corrupt (storage::partition_log::
  // repair: cut at each damage, appends continue at or above the recovery
  // point) and brings the partition online. Replies the report (JSON text:
  // records_removed, bytes_removed, cuts, new bounds); errors: not_corrupt
  // (conflict: online, or offline for another reason), storage_error.
  caf::replies_to<repair_atom>::with<std::string>,
  // Kafka DeleteRecords (KIP-107): advances the log start to `before` (-1:
  // the log end; see storage::partition_log::advance_log_start), durably
  // (fsynced) before the reply. Replies the log start after the call
  // (unchanged when `before` is at or below it). `sealed_ok` false (a
  // client's request) refuses a sealed partition with partition_moved, so
  // that a move carries a final log start; a move's confirm passes true.
  // Errors: invalid_request (`before` < -1), offset_out_of_range with the
  // bounds (`before` above the log end), partition_moved, partition_offline,
  // storage_error.
  caf::replies_to<delete_records_atom, int64_t, bool>::with<int64_t>,
  // Takes a topic's changed config (segment.bytes, retention.bytes,
  // retention.ms as dataplane::topic_config): retention checks use it from
  // their next run, the active segment rolls at the new segment.bytes.
  // Replies true (also for an offline partition, which opens with it).
  caf::replies_to<config_atom, int64_t, int64_t, int64_t>::with<bool>,
  // The partition's summary (JSON text); an offline partition reports its
  // error and, for a corrupt log, the damage (file, position, offsets).
  caf::replies_to<status_atom>::with<std::string>>;

struct partition_settings {
  std::string data_dir;
  std::string topic;
  int32_t partition = 0;
  dataplane::topic_config config;
  int64_t retention_check_ms = 30000;
  /// Shared storage (docs/shared-storage.md): `data_dir` is Storage.SharedDir
  /// and the partition lives in `<data_dir>/<topic>-<partition>~<created_at>`,
  /// opened per owner epoch as the applied image names this broker owner
  /// (storage/epoch_chain.hpp). The stamp keeps a topic created again under
  /// the same name apart from the old one's files.
  bool shared = false;
  int64_t created_at = 0;  ///< the topic's metadata-log identity (shared storage only)
};

/// Settings of a broker's I/O workers (config keys Storage.IoThreads,
/// Storage.MaxOpenFiles, Storage.WriteAheadLog, Storage.WalCheckpointBytes
/// and Storage.WalMaxBatchBytes, docs/configuration.md).
struct io_settings {
  int threads = 4;  ///< I/O workers (threads), >= 1
  /// Segment files held open across all workers; 0 = half the process's
  /// RLIMIT_NOFILE soft limit (at least 64). Idle partitions past it have
  /// their active segment closed, least recently used first, and opened
  /// again on their next use.
  int64_t max_open_files = 0;
  /// The data directory: each worker opens its syncfs descriptor for this
  /// file system when it starts (storage::syncfs_handles).
  std::string data_dir;
  /// Storage.WriteAheadLog: each worker makes its group commit rounds
  /// durable with one write and one fdatasync of its own WAL file
  /// (storage/wal.hpp, docs/storage.md "Write-ahead log") instead of a sync
  /// of every partition's segment. Whatever this says, a WAL left by an
  /// earlier run is replayed before any partition opens.
  bool write_ahead_log = true;
  /// Storage.WalCheckpointBytes: a worker's WAL file grows to about this
  /// many bytes before its partitions' segments are synced (one syncfs)
  /// and the file is replaced by an empty one.
  int64_t wal_checkpoint_bytes = 64LL << 20;
  /// Storage.WalMaxBatchBytes: an acks=leader batch of at least this many
  /// bytes skips the WAL, and so does every later append of its partition
  /// until a sync of the partition's segment; the rounds of such a
  /// partition sync its segment (docs/storage.md "Large batches skip the
  /// WAL").
  int64_t wal_max_batch_bytes = 64LL << 10;
  /// Write-behind, with the WAL on (docs/storage.md "Write-behind"): bytes
  /// of appends a partition's active segment holds in memory before one
  /// pwrite (0: none held), and the longest they stay held (ms).
  size_t write_behind_bytes = 16u << 10;
  int64_t write_behind_ms = 50;
  /// Shared storage (docs/shared-storage.md): the applied image the
  /// workers follow (a shared partition is opened at the owner epoch the
  /// image names this broker owner at, closed when it no longer does), this
  /// broker's id in it, and the broker lease (null: always valid). An
  /// append to a shared partition is acknowledged only if, after its sync
  /// returned, the lease is valid and the image still names this broker
  /// owner at the epoch the log was opened at. Unused without shared
  /// partitions.
  std::shared_ptr<const owner_view> image;
  std::string broker_id;
  std::function<bool()> lease_valid;
  /// Takeovers held after a move's take-back (shared_mode::hold; null: none).
  std::shared_ptr<cluster::takeover_hold> takeover_hold;
  /// Tests only: called on a worker's committer thread before each WAL
  /// commit it runs ("Pipelined commits", docs/storage.md), so that a test
  /// can hold a commit under way. Null in a broker.
  std::function<void()> before_wal_commit;
};

/// A broker's I/O workers. Shared by the broker and every partition actor;
/// the workers stop when the last holder lets go, closing every log they
/// still hold (one file-system sync before and one after the clean
/// checkpoints, so stopping thousands of partitions costs two syncs).
class io_pool;

/// Spawns `settings.threads` I/O workers (detached actors), enrolled in
/// `reg` (when valid) as "io-worker N", kind "io_worker"; their status
/// (JSON) counts partitions, open files, sync rounds, syncfs calls and
/// fdatasyncs.
std::shared_ptr<io_pool> spawn_io_pool(caf::actor_system& sys, io_settings settings,
                                       const registry_actor* reg = nullptr);

/// Spawns a partition actor (cooperative) on the worker of `pool` that its
/// topic and partition hash to. The worker opens (and recovers) the log
/// before it handles anything else for it; a log that cannot be opened (a
/// corrupt log included) leaves the partition answering partition_offline
/// and counted in the moonmq_offline_partitions gauge until repaired. When
/// the actor exits, the worker closes the log cleanly
/// (storage::partition_log::close).
partition_actor spawn_partition(caf::actor_system& sys, const std::shared_ptr<io_pool>& pool,
                                partition_settings settings);

}  // namespace moonmq
