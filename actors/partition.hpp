#pragma once
// The partition actor: owns one partition's log (storage::partition_log) and
// its traffic counters. It runs detached (its own thread), so a blocking
// write or fsync never stalls the actors serving other partitions.
//
// Group commit: an append with acks=leader is written at once and its reply
// held until the next fsync, which the actor schedules by mailing itself a
// flush message; every append already queued ahead of that message shares
// the same fsync.

#include <cstdint>
#include <string>

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/atoms.hpp"
#include "dataplane/topic_catalog.hpp"

namespace moonmq {

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
  // (log_start, log_end, size_bytes).
  caf::replies_to<bounds_atom>::with<int64_t, int64_t, int64_t>,
  // Time lookup (ListOffsets by timestamp, see partition_log::
  // offset_for_timestamp): (offset, timestamp) of the earliest record whose
  // timestamp is >= `timestamp`, or (-1, -1) when none has one. Errors:
  // invalid_request (negative timestamp), storage_error, partition_offline.
  caf::replies_to<time_lookup_atom, int64_t>::with<int64_t, int64_t>,
  // Deletes the partition (its topic was deleted): appends still waiting
  // for their fsync are answered unknown_topic (never acknowledged), the log
  // is closed and its directory removed, and the actor exits. Replies true;
  // error storage_error when the directory cannot be removed (the actor
  // exits all the same).
  caf::replies_to<delete_atom>::with<bool>,
  // Internal: fsync the appends held for group commit.
  caf::reacts_to<flush_atom>,
  // Internal: apply retention (also re-armed on a timer).
  caf::reacts_to<retain_atom>,
  // Repairs a log that open refused as corrupt (storage::partition_log::
  // repair: cut at each damage, appends continue at or above the recovery
  // point) and brings the partition online. Replies the report (JSON text:
  // records_removed, bytes_removed, cuts, new bounds); errors: not_corrupt
  // (409: online, or offline for another reason), storage_error.
  caf::replies_to<repair_atom>::with<std::string>,
  // The partition's summary (JSON text); an offline partition reports its
  // error and, for a corrupt log, the damage (file, position, offsets).
  caf::replies_to<status_atom>::with<std::string>>;

struct partition_settings {
  std::string data_dir;
  std::string topic;
  int32_t partition = 0;
  dataplane::topic_config config;
  int64_t retention_check_ms = 30000;
};

/// Spawns the partition actor (detached). It opens (and recovers) its log
/// first; a log that cannot be opened (a corrupt log included) leaves the
/// actor answering partition_offline and counted in the
/// moonmq_offline_partitions gauge until repaired. On exit it closes the log
/// cleanly (storage::partition_log::close).
partition_actor spawn_partition(caf::actor_system& sys, partition_settings settings);

}  // namespace moonmq
