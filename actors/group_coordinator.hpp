#pragma once
// The group coordinator actor: consumer groups (membership, generation,
// range assignment; groups/group_state.hpp) and their committed offsets
// (durable; groups/offset_store.hpp), and the Kafka groups' membership
// (JoinGroup/SyncGroup rounds; groups/kafka_membership.hpp). HTTP answers
// are JSON texts in the shapes
// of CONTRACT.md §3 so the bridge only forwards them.

#include <memory>
#include <string>
#include <vector>

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/atoms.hpp"
#include "actors/catalog_view.hpp"
#include "actors/registry.hpp"
#include "groups/kafka_membership.hpp"
#include "groups/offset_store.hpp"

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(moonmq::kafka::join_group_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(moonmq::kafka::join_group_response)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(moonmq::kafka::sync_group_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(moonmq::kafka::sync_group_response)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(moonmq::kafka::heartbeat_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(moonmq::kafka::leave_group_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(moonmq::kafka::leave_group_response)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(moonmq::kafka::described_group)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<moonmq::kafka::described_group>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<moonmq::kafka::listed_group>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(moonmq::groups::kafka_commit_check)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(moonmq::groups::kafka_subscription)

namespace moonmq {

/// Marks the owner-side commit of a cluster-wide group (≤ 10 chars).
using owner_fence_atom = caf::atom_constant<caf::atom("ownfence")>;
/// The Kafka groups' membership (groups/kafka_membership.hpp), which this
/// actor owns: every Kafka group API is a request to it.
using kafka_group_atom = caf::atom_constant<caf::atom("kgroup")>;

using group_actor = caf::typed_actor<
  // Join (group, member id or "", topics) → {"member_id","generation","assignment"}.
  caf::replies_to<join_atom, std::string, std::string, std::vector<std::string>>::with<std::string>,
  // Join with partition counts learned elsewhere (group, member or "",
  // topics, {"topic":count} JSON): the cluster-wide join (docs/groups.md
  // "Cluster-wide groups"). A topic's count is the larger of the local
  // catalogue's and the learned one; learned counts are kept for later
  // joins and housekeeping. Same answer as join.
  caf::replies_to<join_atom, std::string, std::string, std::vector<std::string>, std::string>::with<std::string>,
  // Heartbeat (group, member) → same shape as join; not_found unknown_member when evicted.
  caf::replies_to<beat_atom, std::string, std::string>::with<std::string>,
  // Leave (group, member) → true.
  caf::replies_to<leave_atom, std::string, std::string>::with<bool>,
  // Commit (group, offsets JSON array, generation or -1, member or "") → true
  // once durable; conflict illegal_generation when fenced.
  caf::replies_to<commit_atom, std::string, std::string, int32_t, std::string>::with<bool>,
  // Commit on a partition owner that is not the group's coordinator (group,
  // offsets JSON array, generation or -1, member (ignored), owner_fence_atom):
  // fenced by the newest generation this broker has seen for the group
  // (conflict stale_generation when older); a newer one raises it. → true once durable.
  caf::replies_to<commit_atom, std::string, std::string, int32_t, std::string, owner_fence_atom>::with<bool>,
  // A generation seen in a join/heartbeat answer relayed from the
  // coordinator (group, generation): raises the owner fence.
  caf::reacts_to<observe_atom, std::string, int32_t>,
  // Committed offsets (group, topic or "") →
  // {"offsets":[{"topic","partition","offset","metadata"}]}.
  caf::replies_to<offsets_atom, std::string, std::string>::with<std::string>,
  // Every committed offset this broker stores, for its metrics (GET
  // /metrics, moonmq_group_lag) → [{"group","topic","partition","offset"}]
  // sorted by group, topic, partition; error not_ready without a store.
  caf::replies_to<offsets_atom>::with<std::string>,
  // Every group's committed offset for (topic, partition), the snapshot a
  // move's source pushes to the destination → [{"group","offset","metadata"}].
  caf::replies_to<offsets_atom, std::string, int32_t>::with<std::string>,
  // Merges offsets pushed by a move's source (topic, partition,
  // [{"group","offset","metadata"?}] JSON): each stored only when higher than the
  // committed one (DESIGN §3 step 5), durably. Replies how many were stored;
  // errors: invalid_request (malformed list), storage_error.
  caf::replies_to<merge_atom, std::string, int32_t, std::string>::with<int32_t>,
  // Forgets every group's committed offset for partitions [0, count) of a
  // topic (its local copy was deleted: docs/metadata.md "Deleting a topic").
  caf::reacts_to<delete_atom, std::string, int32_t>,
  // Deletes a group (Kafka DeleteGroups) on this broker: its committed
  // offsets (durably) and its HTTP and Kafka membership state. Replies
  // whether this broker held anything of it; errors: conflict
  // non_empty_group (HTTP or Kafka members are in it: nothing is deleted),
  // not_ready, storage_error.
  caf::replies_to<delete_atom, std::string>::with<bool>,
  // The groups known here (JSON text): {"groups":[{"group","state",
  // "generation","members"}]} for every group with HTTP membership state
  // here, and "committed":[ids] for every group with offsets stored here.
  caf::replies_to<list_atom>::with<std::string>,
  // One group's HTTP membership (JSON text): {"state":"Empty"|"Stable"|
  // "Dead" (unknown here),"generation","members":[{"member_id","topics",
  // "assignment":[{"topic","partition"}],"last_seen_ms"}]}.
  caf::replies_to<status_atom, std::string>::with<std::string>,
  // Deletes the group's committed offsets of some partitions of a topic
  // on this broker (Kafka OffsetDelete; group, topic, partitions), durably.
  // Replies how many it held, or -1 when it stores no offset of the group
  // at all; errors: invalid_group_id, not_ready, storage_error.
  caf::replies_to<delete_atom, std::string, std::string, std::vector<int32_t>>::with<int32_t>,
  // Internal: evict expired members, follow partition growth.
  caf::reacts_to<tick_atom>,
  // Kafka JoinGroup (request, client id, API version, client host "/<address>"):
  // answered when the join round completes (groups::kafka_membership::join).
  caf::replies_to<kafka_group_atom, kafka::join_group_request, std::string, int16_t, std::string>::with<
    kafka::join_group_response>,
  // Kafka SyncGroup: answered when the leader's assignments are in.
  caf::replies_to<kafka_group_atom, kafka::sync_group_request>::with<kafka::sync_group_response>,
  // Kafka Heartbeat: its error code.
  caf::replies_to<kafka_group_atom, kafka::heartbeat_request>::with<int16_t>,
  // Kafka LeaveGroup (request, API version).
  caf::replies_to<kafka_group_atom, kafka::leave_group_request, int16_t>::with<kafka::leave_group_response>,
  // Whether a Kafka commit may go ahead: its error code (0: yes).
  caf::replies_to<kafka_group_atom, groups::kafka_commit_check>::with<int16_t>,
  // Kafka ListGroups: every Kafka group with its protocol type.
  caf::replies_to<kafka_group_atom, list_atom>::with<std::vector<kafka::listed_group>>,
  // Kafka DescribeGroups of one group ("Dead" when unknown).
  caf::replies_to<kafka_group_atom, status_atom, std::string>::with<kafka::described_group>,
  // Every Kafka group, described (GET /cluster/groups).
  caf::replies_to<kafka_group_atom, status_atom>::with<std::vector<kafka::described_group>>,
  // A Kafka group's members and subscribed topics (OffsetDelete).
  caf::replies_to<kafka_group_atom, std::string>::with<groups::kafka_subscription>,
  // Internal: expire silent Kafka members, close overdue join rounds (every 250 ms).
  caf::reacts_to<kafka_group_atom, tick_atom>,
  caf::replies_to<status_atom>::with<std::string>>;

struct shared_mode;  // actors/shared_mode.hpp

struct group_settings {
  std::string data_dir;
  int64_t session_timeout_ms = 10000;
  /// Kafka.GroupInitialRebalanceDelayMs (Kafka's
  /// group.initial.rebalance.delay.ms): how long the first join round of
  /// an Empty Kafka group waits for more members.
  int64_t kafka_initial_rebalance_delay_ms = 0;
  /// Shared storage (docs/shared-storage.md "Committed group offsets"): the
  /// committed offsets of a partition the metadata log knows live in its
  /// shared directory, per owner epoch (groups/epoch_offsets.hpp), written
  /// and acknowledged only while `shared` holds; "" = local mode.
  std::string shared_dir{};
  std::shared_ptr<const shared_mode> shared{};
};

/// Spawns the coordinator (detached: commits fsync) with the offset store
/// under settings.data_dir. The node opens that store first, so that a
/// corrupt file stops the boot, and hands it over as `opened`; null: the
/// coordinator opens it (an error is then logged, and commits refused).
group_actor spawn_group_coordinator(caf::actor_system& sys, group_settings settings,
                                    std::shared_ptr<catalog_view> view, registry_actor reg,
                                    std::shared_ptr<groups::offset_store> opened = nullptr);

}  // namespace moonmq
