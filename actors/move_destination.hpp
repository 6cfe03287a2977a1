#pragma once
// The destination half of a partition move (docs/cluster.md "How a move
// runs", steps 1, 2, 4, 5 and 6): prepares this broker's copy of a
// partition a source is moving here, applies the source's batches at their
// offsets, merges the group offsets it pushes, confirms the copy (takes
// ownership by a conditional owner entry, then unseals), or discards it
// when the move failed. The reassigner (actors/reassigner.hpp) is the
// source half; the cluster listener's routes (api/move_destination_routes.cpp)
// decode the source's requests, check the controller fence, ask this
// actor and encode its answer. One per broker; every step is a few
// requests to the cluster state, the broker, a partition or the group
// coordinator, so the actor never blocks.
//
// Errors, by kind (actors/errors.hpp): not_found unknown_partition (no
// local copy); conflict destination_owns_partition (a move may only write
// over a copy owned elsewhere), owner_changed (the move has ended: another
// broker owns the partition), offset_mismatch (carries this copy's log
// end); unavailable not_ready (retry: the cutover or a topic is not applied
// here yet, or an earlier try moved the owner epoch on); and whatever the
// asked actor answered.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/atoms.hpp"
#include "actors/broker.hpp"
#include "actors/catalog_view.hpp"
#include "actors/cluster_state.hpp"
#include "actors/group_coordinator.hpp"
#include "actors/registry.hpp"
#include "cluster/move_messages.hpp"

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(moonmq::cluster::move_ensure)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(moonmq::cluster::move_confirm)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(moonmq::cluster::move_cleanup)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(moonmq::cluster::move_offsets)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(moonmq::cluster::move_answer)

namespace moonmq {

using move_destination_actor = caf::typed_actor<
  // Step 1: (topic, partition, the source's ensure, the controller epoch
  // the request passed the fence at). Creates or grows the topic to the
  // source's partition count, names the source owner of the moving
  // partition (and each partition the ensure creates, as the source names
  // it), resets the copy to the source's log start (local storage) and
  // seals it durably. Answers {log_start_offset, log_end_offset} (shared
  // storage: copy_none, nothing reset).
  caf::replies_to<ensure_atom, std::string, int32_t, cluster::move_ensure, int64_t>::with<cluster::move_answer>,
  // Steps 2 and 4: (topic, partition, expected offset, batches, fsync)
  // appended at exactly the expected offset, keeping their offsets;
  // offset_mismatch when the copy ends elsewhere. Refused with conflict
  // shared_storage in shared mode (nothing is copied).
  caf::replies_to<copy_atom, std::string, int32_t, int64_t, std::string, bool>::with<cluster::move_answer>,
  // Step 5: the groups' committed offsets of one partition, merged higher
  // wins; answers how many were taken.
  caf::replies_to<merge_atom, cluster::move_offsets>::with<int32_t>,
  // Step 6: (topic, partition, the source's confirm, fence epoch). Fsyncs
  // the copy, checks it ends at the sealed end, takes the source's log
  // start, takes ownership by a conditional owner entry at the epoch it
  // holds the partition at, and unseals. A repeated confirm of the same
  // move is answered already_confirmed. Answers {owner, log_end_offset}.
  caf::replies_to<confirm_atom, std::string, int32_t, cluster::move_confirm, int64_t>::with<cluster::move_answer>,
  // A failed or cancelled move: (topic, partition, the source's cleanup,
  // fence epoch). Discards the copy (local storage: reset to its log
  // start) and unseals it, only while another broker owns the partition,
  // and only when the latest ensure received for it was of the cleanup's
  // move (else conflict stale_cleanup: a later move's copy is kept).
  caf::replies_to<cleanup_atom, std::string, int32_t, cluster::move_cleanup, int64_t>::with<cluster::move_answer>,
  // {"broker_id","shared","requests","failed"}.
  caf::replies_to<status_atom>::with<std::string>>;

struct move_destination_settings {
  std::string broker_id;
  /// Deadline of each request to a local actor (Cluster.PeerTimeout: the
  /// source waits that long for the whole step).
  std::chrono::milliseconds timeout{5000};
  /// Storage.SharedDir is set (docs/shared-storage.md "Moves and
  /// failover"): ensure only seals, append is refused, confirm takes the
  /// partition over by its owner entry and checks the end, cleanup only
  /// unseals; nothing is ever reset.
  bool shared = false;
};

/// Spawns the destination half and enrolls it as "move-destination" (kind
/// "move_destination").
move_destination_actor spawn_move_destination(caf::actor_system& sys, move_destination_settings settings,
                                              std::shared_ptr<catalog_view> catalog, std::shared_ptr<owner_view> owners,
                                              cluster_state_actor state, broker_actor broker, group_actor groups,
                                              registry_actor reg);

}  // namespace moonmq
