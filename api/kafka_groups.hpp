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
// Membership lives in the group coordinator actor of the group's
// coordinator, the broker that coordinates it over HTTP too
// (kafka_coordinator_of), as pure code (groups/kafka_membership.hpp) that
// actor owns and ticks; elsewhere the group APIs answer NOT_COORDINATOR. Offsets live with each partition's
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

}  // namespace moonmq::transport
