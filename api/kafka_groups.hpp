#pragma once
// Kafka consumer groups for the Kafka listener (issue 9, docs/kafka.md):
// FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup, ListGroups,
// DescribeGroups and DeleteGroups with Kafka's client-side assignment protocol (states
// Empty, PreparingRebalance, CompletingRebalance, Stable as in Kafka's
// GroupCoordinator: only the leader receives the member list, SyncGroup
// distributes its assignments),
// and OffsetCommit/OffsetFetch on the SAME committed offsets as the HTTP
// API (the group_coordinator actor's offset store).
//
// Membership lives in kafka_group_table (in memory, mutex-guarded, timers
// through kafka_context::schedule) on the group's coordinator, the broker
// that coordinates it over HTTP too (kafka_coordinator_of); elsewhere the
// group APIs answer NOT_COORDINATOR. Offsets live with each partition's
// owner: commits are split by owner, fetches gathered from every broker.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kafka/codec.hpp"
#include "api/kafka_handlers.hpp"

namespace moonmq::transport {

/// OffsetCommit's storing half (docs/groups.md): `req`'s offsets split by
/// partition owner, this broker's part to the group actor's offset store,
/// each other owner's part to its POST /cluster/groups/{g}/offsets; every
/// partition answered `fence` instead when it is not 0 (the Kafka group's
/// generation check, which a committing transaction does not make: its
/// offsets were fenced by the producer epoch). `done` gets the
/// OffsetCommit response and its error count.
void commit_at_owners(const std::shared_ptr<kafka_context>& ctx, kafka::offset_commit_request req, int16_t fence,
                      kafka_done done);

/// Handles FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
/// ListGroups, DescribeGroups, DeleteGroups, OffsetCommit and OffsetFetch
/// (`done` exactly once, from any thread).
void handle_kafka_group_request(const std::shared_ptr<kafka_context>& ctx, kafka::request& req, kafka_done done);

/// The Kafka groups' membership state machine. Callbacks are called
/// outside its lock.
class kafka_group_table {
public:
  using clock = std::chrono::steady_clock;
  /// `initial_rebalance_delay`: Kafka's group.initial.rebalance.delay.ms,
  /// how long the first round of an Empty group waits for more members
  /// (tick() closes it; 0 = at once).
  explicit kafka_group_table(std::chrono::milliseconds initial_rebalance_delay = std::chrono::milliseconds{0});

  /// `client_host`: "/<address>" of the member's connection (DescribeGroups).
  /// Static membership (KIP-345): a request naming a group instance id whose
  /// member id is now another one gets 82 FENCED_INSTANCE_ID (also
  /// SyncGroup, Heartbeat, LeaveGroup, OffsetCommit); a known instance
  /// joining without a member id takes its member over (docs/kafka.md).
  void join(const kafka::join_group_request& req, const std::string& client_id, int16_t version,
            std::function<void(kafka::join_group_response)> reply, const std::string& client_host = {});
  void sync(const kafka::sync_group_request& req, std::function<void(kafka::sync_group_response)> reply);
  int16_t heartbeat(const kafka::heartbeat_request& req);
  /// Removes `member` (and rebalances the rest): 0, 25 UNKNOWN_MEMBER_ID, or
  /// 82 FENCED_INSTANCE_ID when `instance` is now another member's. Member
  /// "" with an `instance`: removes that static member (LeaveGroup v3+).
  int16_t leave(const std::string& group, const std::string& member,
                const std::optional<std::string>& instance = std::nullopt);
  /// 0 when a commit by (member, instance, generation) may go ahead (-1, ""
  /// and no instance = a standalone commit), else 22 / 25 / 82 / 27 (27 only
  /// in CompletingRebalance).
  int16_t check_commit(const std::string& group, const std::string& member,
                       const std::optional<std::string>& instance, int32_t generation);
  /// Expires silent members and completes overdue rebalances (`now` injectable for tests).
  void tick(clock::time_point now = clock::now());
  /// Every group of the table with its protocol type (ListGroups).
  std::vector<kafka::listed_group> list() const;
  /// One group as DescribeGroups shows it: state "Dead" and no members when
  /// the table does not know it; protocol, member metadata and assignments
  /// only while Stable (Kafka's GroupMetadata.summary).
  kafka::described_group describe_group(const std::string& id) const;
  /// For OffsetDelete (KIP-496): whether `group` has members, whether it
  /// uses the "consumer" protocol type, and the topics its members
  /// subscribe to (each member's metadata for its protocols, in Kafka's
  /// ConsumerProtocolSubscription layout: version, [topic], ...).
  struct subscription {
    bool exists = false;  ///< the table knows the group (members or not)
    bool has_members = false;
    bool consumer = true;
    std::set<std::string> topics;
  };
  subscription subscribed(const std::string& group) const;
  /// Forgets `group` when it has no member (DeleteGroups): 0, with
  /// `existed` telling whether the table knew it; 68 NON_EMPTY_GROUP (and
  /// nothing changes) while members are in it.
  int16_t remove_if_empty(const std::string& group, bool& existed);
  /// {"groups":[{"id","state","generation","members"}]} for the stats actor.
  std::string describe() const;

  struct impl;

private:
  std::shared_ptr<impl> impl_;
};

}  // namespace moonmq::transport
