#pragma once
// The transaction coordinator actor (KIP-98; docs/transactions.md): one per
// broker, it runs the transactional requests of the ids it coordinates (and
// TxnOffsetCommit of any id, on the group's coordinator). Each request is
// decided by the pure rules of cluster/txn_coordinator.hpp against the id's
// record in the metadata image, the new record is proposed to the metadata
// log as a compare-and-set on the record's version, and only then answered.
// Ending a transaction writes a COMMIT or ABORT marker on every partition of
// it (wherever its owner is) and, on commit, the offsets committed in it,
// answers EndTxn, then writes the completed record: alone, or carried by the
// id's next request's write when one arrives within complete_linger. Requests of one id run one at a time.
// A tick aborts transactions open past their timeout and finishes endings
// left by a coordinator that died or lost the id (the record says what was
// decided, so finishing is the same whoever does it), or whose round failed:
// a retried round writes only the markers and offsets not written yet.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/atoms.hpp"
#include "actors/raft_node.hpp"
#include "actors/registry.hpp"
#include "cluster/txn_coordinator.hpp"

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(moonmq::cluster::txn_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(moonmq::cluster::txn_answer)

namespace moonmq {

using txn_actor = caf::typed_actor<
  // One transactional request → its answer (errors are in the answer, never
  // a CAF error: the edge maps them to Kafka codes).
  caf::replies_to<txn_atom, cluster::txn_request>::with<cluster::txn_answer>,
  // Internal: run the queue of an id again (after a lost compare-and-set).
  caf::reacts_to<txn_atom, std::string>,
  // Internal: end_wait of an id's ending round passed (id, round).
  caf::reacts_to<txn_atom, std::string, int64_t>,
  // Internal: complete_linger of an id's ending round passed (id, round).
  caf::reacts_to<txn_atom, commit_atom, std::string, int64_t>,
  // Internal: one effect of an ending round finished (id, round, effect
  // key, "" or the error).
  caf::reacts_to<txn_atom, step_atom, std::string, int64_t, std::string, std::string>,
  // Internal: timeouts and unfinished endings of the ids coordinated here.
  caf::reacts_to<tick_atom>,
  // {"queued","ending","endings_finished","timeouts_aborted","rounds_failed",
  // "markers_failed" (markers and offset commits that failed),"ids_expired"}.
  caf::replies_to<status_atom>::with<std::string>>;

/// What the coordinator does outside itself. Each `done` is called exactly
/// once, from any thread, with "" on success or the error.
struct txn_effects {
  /// Writes the marker of `rec` (commit when prepare_commit, at
  /// rec.producer_id / producer_epoch) on partition `p`, at its owner.
  std::function<void(const cluster::txn_record& rec, const cluster::txn_partition& p,
                     std::function<void(std::string)> done)>
    write_marker;
  /// Commits `offsets` of `group` at the partitions' owners (as OffsetCommit
  /// without a generation).
  std::function<void(const std::string& group, const std::vector<cluster::txn_offset>& offsets,
                     std::function<void(std::string)> done)>
    commit_offsets;
  /// True when this broker coordinates `transactional_id` now.
  std::function<bool(const std::string& transactional_id)> coordinates;
  /// A producer id no other producer has (transport::kafka_producer_ids).
  std::function<int64_t()> new_producer_id;
};

struct txn_settings {
  std::string broker_id;
  std::shared_ptr<owner_view> owners;
  raft_actor raft;
  /// How often timeouts and unfinished endings are checked.
  std::chrono::milliseconds tick{500};
  /// transaction.max.timeout.ms.
  int32_t max_timeout_ms = cluster::max_transaction_timeout_ms;
  /// How long an EndTxn waits for its markers before it is answered anyway
  /// (the outcome is durable once prepared; the tick finishes it).
  std::chrono::milliseconds end_wait{5000};
  /// transactional.id.expiration.ms (Kafka's default, 7 days): an id with
  /// nothing open whose record was not written for longer is removed from
  /// the metadata log; its next InitProducerId starts afresh.
  std::chrono::milliseconds id_expiration{std::chrono::hours(24 * 7)};
  /// How long the completed record of an ending whose effects are written
  /// waits for the id's next request to carry it (the same producer's next
  /// transaction usually comes within a millisecond); written alone after.
  std::chrono::milliseconds complete_linger{20};
};

/// Spawns the coordinator (a cooperative actor), enrolled in `reg` as
/// "txn-coordinator", kind "txn_coordinator".
txn_actor spawn_txn_coordinator(caf::actor_system& sys, txn_settings settings, txn_effects effects,
                                registry_actor reg);

}  // namespace moonmq
