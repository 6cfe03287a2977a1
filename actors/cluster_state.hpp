#pragma once
// The cluster state of one broker, backed by the Raft metadata log (DESIGN
// §5 and §9, docs/raft.md "Wiring"): the controller is the Raft leader and
// its epoch the Raft term; claim succeeds only on the leader; the fence
// refuses epochs below the current term (and, at the current term, any id
// but the known leader); owner changes, topics, broker standing and the
// dynamic balancer settings are proposed to the log and answered once
// committed and applied here. The raft_node publishes the owner_view the
// request paths read. (Cluster mode without Raft, with its fence and
// ownership files, is retired: docs/metadata.md "Upgrading".)

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/atoms.hpp"
#include "actors/broker.hpp"
#include "actors/catalog_view.hpp"
#include "actors/image.hpp"
#include "actors/raft_node.hpp"
#include "actors/registry.hpp"

namespace moonmq {

using cluster_state_actor = caf::typed_actor<
  // The controller epoch (the Raft term) when this broker is the Raft
  // leader; error conflict not_controller otherwise.
  caf::replies_to<claim_atom>::with<int64_t>,
  // Checks a control-plane request's (epoch, controller id) against the Raft
  // term and leader. Replies the higher of the two epochs; error conflict
  // stale_epoch (below the term) / epoch_conflict (at the term, not the
  // leader), invalid for an epoch below 1.
  caf::replies_to<observe_atom, int64_t, std::string>::with<int64_t>,
  // Sets the owner of (topic, partition) through the metadata log (the
  // epoch is unused). Replies true once applied here; the proposal's errors.
  caf::replies_to<owner_atom, std::string, int32_t, std::string, int64_t>::with<bool>,
  // The conditional change (docs/metadata.md "Owner
  // epochs"): topic, partition, owner, unused epoch, the owner epoch the
  // partition must still be at. Replies true once applied here; error conflict
  // owner_epoch_changed when the partition's epoch had moved on (nothing
  // changed).
  caf::replies_to<owner_atom, std::string, int32_t, std::string, int64_t, int64_t>::with<bool>,
  // The same, proposed on this broker only when `forward` is false: error
  // unavailable no_controller unless it is the Raft leader (a failover the leader
  // decided from its own count of a broker's silence must not be carried
  // out by another leader, which has not waited). Unforwarded, the entry
  // also expects the old owner still fenced (raft::owner_entry::
  // expect_owner_fenced): this form is the shared-storage failover's.
  caf::replies_to<owner_atom, std::string, int32_t, std::string, int64_t, int64_t, bool>::with<bool>,
  // Proposes a move entry (raft::move_entry's JSON payload text,
  // docs/cluster.md "Moves in the log"). Replies true once applied here;
  // errors: conflict move_state_changed (committed as a no-op: the move was not
  // in the state it expected), the proposal's errors.
  caf::replies_to<move_atom, std::string>::with<bool>,
  // (Raft term, leader id or "" while none is known).
  caf::replies_to<get_atom>::with<int64_t, std::string>,
  // Creates a topic cluster-wide through the metadata log
  // (name, partitions, config JSON text or ""): a `topic` entry naming this
  // broker owner of every partition (or spreading them, with TopicPlacement
  // spread: docs/metadata.md "Placing a new topic's partitions"), answered once it is applied here and
  // the local copy exists. Replies true when this request's entry created
  // it, false when it existed with that count; errors: invalid_request (bad
  // name, count or config; existing with another count), the proposal's
  // errors (unavailable no_controller / proposal_lost, timeout).
  caf::replies_to<create_atom, std::string, int32_t, std::string>::with<bool>,
  // The same with the owner of each partition named (a Kafka CreateTopics
  // assignment): one broker of the cluster per partition; errors besides:
  // invalid_request (a count that differs, a broker not of the cluster or
  // removed), conflict placement_not_readable (a broker may not read the owners).
  caf::replies_to<create_atom, std::string, int32_t, std::string, std::vector<std::string>>::with<bool>,
  // Grows a topic to `count` partitions cluster-wide (the new
  // ones owned by this broker, or spread as a create). Replies the new count; errors: unknown_topic,
  // invalid_request (not larger, over the limit), the proposal's errors.
  caf::replies_to<grow_atom, std::string, int32_t>::with<int32_t>,
  // Changes a topic's config cluster-wide through the metadata log
  // (docs/metadata.md "Topic configuration"): topic, changes, replace
  // (dataplane::change_topic_config over the config the log holds). Replies
  // the new config (JSON text of the keys set) once applied here and given
  // to the local copy; errors: unknown_topic, invalid_request (naming the
  // key), the proposal's errors.
  caf::replies_to<config_atom, std::string, dataplane::topic_config_changes, bool>::with<std::string>,
  // Deletes a topic cluster-wide through the metadata log (docs/metadata.md
  // "Deleting a topic"). Replies true once the deletion is applied here
  // (every broker then removes its local copy as it applies it); errors:
  // unknown_topic, conflict topic_moving (a move of one of its partitions is
  // unfinished; decided again in log order), the proposal's errors.
  caf::replies_to<delete_atom, std::string>::with<bool>,
  // Changes the cluster's dynamic balancer settings (a patch,
  // JSON object text, config/dynamic.hpp) through the metadata log. Replies
  // the merged settings (JSON object text) once applied here; errors:
  // invalid_request (a bad patch), the proposal's errors.
  caf::replies_to<config_atom, std::string>::with<std::string>,
  // The standing of every broker of the cluster (JSON array
  // text of {"id","state":"active"|"draining"|"removed","fenced","partitions"},
  // docs/admin-api.md "Brokers").
  caf::replies_to<broker_atom>::with<std::string>,
  // Changes a broker's standing through the metadata log:
  // broker id, change ("drain", "undrain" or "remove"). Replies the broker's
  // row as above once applied here. Errors: not_found unknown_broker, conflict
  // broker_removed (drain of a removed broker), conflict not_draining / broker_not_empty
  // (remove of a broker that is not draining or still owns partitions; the
  // metadata log decides in log order, so a race ends the same way), the
  // proposal's errors.
  caf::replies_to<broker_atom, std::string, std::string>::with<std::string>,
  // Internal: looks for local topics the metadata log does not hold
  // and imports them (see import_local_topics).
  caf::reacts_to<tick_atom>,
  caf::replies_to<status_atom>::with<std::string>>;

/// "" unless `data_dir` holds partition owners written by cluster mode
/// without Raft (its ownership file with rows), which a Raft broker would
/// silently ignore; then the message that stops the boot (also for a
/// corrupt file).
std::string check_legacy_cluster_state(const std::string& data_dir);

/// The Raft side of the cluster state.
struct raft_link {
  std::shared_ptr<raft_view> view;
  raft_actor node;
  /// The voters of the metadata log (this one and its configured peers
  /// unless Cluster.Raft.Voters says otherwise); the brokers that register
  /// at runtime come from the image (owner_view::members).
  std::vector<std::string> brokers;
};

class broker_traits_view;

/// Where the partitions of a topic created or grown through this broker
/// start (docs/metadata.md "Placing a new topic's partitions").
struct topic_placement_settings {
  /// Cluster.TopicPlacement ("proposer" or "spread"); the metadata log's
  /// TopicPlacement overrides it.
  std::string configured = "spread";
  /// Each broker's rack, weight and topic placement version, as the
  /// load_meter last heard them (null: always on this broker).
  std::shared_ptr<broker_traits_view> traits;
  /// Autobalance.ExcludedBrokers: never placed on (the log's
  /// ExcludedBrokers, when set, replaces it).
  std::vector<std::string> excluded;
  /// A broker not heard from for longer (its load report) gets no new
  /// partition: it may be dead before it is fenced (3 × Placement.HeartbeatMs).
  int64_t fresh_ms = 15000;
};

/// Spawns the cluster state actor (detached) for broker `self_id`. `groups`
/// forgets the committed offsets of a topic copy this actor deletes.
cluster_state_actor spawn_cluster_state(caf::actor_system& sys, std::string self_id, std::shared_ptr<owner_view> view,
                                        registry_actor reg, raft_link raft,
                                        std::optional<broker_actor> broker = std::nullopt,
                                        std::shared_ptr<catalog_view> catalog = nullptr,
                                        std::optional<group_actor> groups = std::nullopt,
                                        topic_placement_settings placement = {});

}  // namespace moonmq
