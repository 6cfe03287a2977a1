#pragma once
// Wire structs of the consumer-group APIs: FindCoordinator (10) v0-2,
// JoinGroup (11) v0-5, Heartbeat (12) v0-3, LeaveGroup (13) v0-1, SyncGroup
// (14) v0-3, DescribeGroups (15) v0-4, ListGroups (16) v0-2, DeleteGroups
// (42) v0-1, OffsetCommit (8) v2-5, OffsetFetch (9) v1-4. Field names follow
// Kafka's message schemas (Kafka 3.8) in snake_case; a comment gives the
// versions carrying a field. Protocol metadata and assignments are opaque
// bytes (protocol type "consumer"). Committed offsets are the next offset to
// read; -1 = none. Durations are ms.

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "kafka/api.hpp"
#include "kafka/wire.hpp"

namespace moonmq::kafka {

// ---- FindCoordinator (key 10) ----

struct find_coordinator_request {
  static constexpr api_key key = api_key::find_coordinator;
  std::string key_value;  ///< Kafka "Key": the group id (key_type 0)
  int8_t key_type = 0;    ///< v1+: 0 group, 1 transaction
};

struct find_coordinator_response {
  static constexpr api_key key = api_key::find_coordinator;
  int32_t throttle_time_ms = 0;              ///< v1+
  int16_t error_code = 0;
  std::optional<std::string> error_message;  ///< v1+
  int32_t node_id = -1;
  std::string host;
  int32_t port = -1;
};

// ---- JoinGroup (key 11) ----

struct join_group_protocol {
  std::string name;      ///< assignor ("range", "roundrobin", ...)
  std::string metadata;  ///< opaque
};

struct join_group_request {
  static constexpr api_key key = api_key::join_group;
  std::string group_id;
  int32_t session_timeout_ms = 0;
  int32_t rebalance_timeout_ms = -1;  ///< v1+ (v0: use session_timeout_ms)
  std::string member_id;              ///< "" on the first join
  std::optional<std::string> group_instance_id;  ///< v5+ (static membership)
  std::string protocol_type;          ///< "consumer"
  std::vector<join_group_protocol> protocols;
};

struct join_group_member {
  std::string member_id;
  std::optional<std::string> group_instance_id;  ///< v5+
  std::string metadata;
};

struct join_group_response {
  static constexpr api_key key = api_key::join_group;
  int32_t throttle_time_ms = 0;  ///< v2+
  int16_t error_code = 0;
  int32_t generation_id = -1;
  std::string protocol_name;
  std::string leader;
  std::string member_id;
  std::vector<join_group_member> members;  ///< the leader only; empty for followers
};

// ---- SyncGroup (key 14) ----

struct sync_group_assignment {
  std::string member_id;
  std::string assignment;  ///< opaque
};

struct sync_group_request {
  static constexpr api_key key = api_key::sync_group;
  std::string group_id;
  int32_t generation_id = -1;
  std::string member_id;
  std::optional<std::string> group_instance_id;  ///< v3+
  std::vector<sync_group_assignment> assignments;  ///< the leader only
};

struct sync_group_response {
  static constexpr api_key key = api_key::sync_group;
  int32_t throttle_time_ms = 0;  ///< v1+
  int16_t error_code = 0;
  std::string assignment;
};

// ---- Heartbeat (key 12) ----

struct heartbeat_request {
  static constexpr api_key key = api_key::heartbeat;
  std::string group_id;
  int32_t generation_id = -1;
  std::string member_id;
  std::optional<std::string> group_instance_id;  ///< v3+
};

struct heartbeat_response {
  static constexpr api_key key = api_key::heartbeat;
  int32_t throttle_time_ms = 0;  ///< v1+
  int16_t error_code = 0;
};

// ---- LeaveGroup (key 13) ----

/// One member a LeaveGroup v3+ names: by member id, or (KIP-345, an
/// administrative removal) by group instance id with member id "".
struct leave_group_member {
  std::string member_id;
  std::optional<std::string> group_instance_id;
};

struct leave_group_request {
  static constexpr api_key key = api_key::leave_group;
  std::string group_id;
  std::string member_id;                   ///< v0-2 only
  std::vector<leave_group_member> members;  ///< v3+ only (KIP-345 batch)
};

struct leave_group_member_response {
  std::string member_id;
  std::optional<std::string> group_instance_id;
  int16_t error_code = 0;
};

struct leave_group_response {
  static constexpr api_key key = api_key::leave_group;
  int32_t throttle_time_ms = 0;  ///< v1+
  int16_t error_code = 0;
  std::vector<leave_group_member_response> members;  ///< v3+: one per member asked for
};

// ---- DescribeGroups (key 15), v0-4 (DescribeGroupsRequest.json: v5 is
// the first flexible version) ----

struct describe_groups_request {
  static constexpr api_key key = api_key::describe_groups;
  std::vector<std::string> groups;
  bool include_authorized_operations = false;  ///< v3+
};

struct described_group_member {
  std::string member_id;
  std::optional<std::string> group_instance_id;  ///< v4+
  std::string client_id;
  std::string client_host;        ///< "/<address>", as Kafka writes it
  std::string member_metadata;    ///< the member's metadata for the chosen protocol (opaque)
  std::string member_assignment;  ///< what SyncGroup gave it (opaque)
};

struct described_group {
  int16_t error_code = 0;
  std::string group_id;
  /// Kafka's state names: Empty, PreparingRebalance, CompletingRebalance,
  /// Stable, Dead (a group the coordinator does not know).
  std::string group_state;
  std::string protocol_type;
  std::string protocol_data;  ///< the chosen protocol (assignor) while Stable, else ""
  std::vector<described_group_member> members;
  /// v3+: bit set of ACL operations; INT32_MIN = not asked for (no ACLs here).
  int32_t authorized_operations = std::numeric_limits<int32_t>::min();
};

struct describe_groups_response {
  static constexpr api_key key = api_key::describe_groups;
  int32_t throttle_time_ms = 0;  ///< v1+
  std::vector<described_group> groups;
};

// ---- ListGroups (key 16), v0-2 (ListGroupsRequest.json: v3 is the first
// flexible version, v4 adds a state filter) ----

struct list_groups_request {
  static constexpr api_key key = api_key::list_groups;
};

struct listed_group {
  std::string group_id;
  std::string protocol_type;
};

struct list_groups_response {
  static constexpr api_key key = api_key::list_groups;
  int32_t throttle_time_ms = 0;  ///< v1+
  int16_t error_code = 0;
  std::vector<listed_group> groups;
};

// ---- DeleteGroups (key 42), v0-1 (DeleteGroupsRequest.json: v2 is the
// first flexible version) ----

struct delete_groups_request {
  static constexpr api_key key = api_key::delete_groups;
  std::vector<std::string> groups_names;
};

struct delete_groups_result {
  std::string group_id;
  int16_t error_code = 0;
};

struct delete_groups_response {
  static constexpr api_key key = api_key::delete_groups;
  int32_t throttle_time_ms = 0;
  std::vector<delete_groups_result> results;
};

// ---- OffsetDelete (key 47), v0 only (OffsetDeleteRequest.json, KIP-496:
// no flexible version) ----

struct offset_delete_topic {
  std::string name;
  std::vector<int32_t> partitions;  ///< partition indexes
};

struct offset_delete_request {
  static constexpr api_key key = api_key::offset_delete;
  std::string group_id;
  std::vector<offset_delete_topic> topics;
};

struct offset_delete_partition_result {
  int32_t partition_index = 0;
  int16_t error_code = 0;
};

struct offset_delete_topic_result {
  std::string name;
  std::vector<offset_delete_partition_result> partitions;
};

struct offset_delete_response {
  static constexpr api_key key = api_key::offset_delete;
  int16_t error_code = 0;  ///< top level: 16, 69, 68, 24 ...
  int32_t throttle_time_ms = 0;
  std::vector<offset_delete_topic_result> topics;
};

// ---- OffsetCommit (key 8) ----

struct offset_commit_partition {
  int32_t partition_index = 0;
  int64_t committed_offset = -1;
  std::optional<std::string> committed_metadata;
  int32_t committed_leader_epoch = -1;  ///< v6+ (KIP-320; read, not used by moonmq)
};

struct offset_commit_topic {
  std::string name;
  std::vector<offset_commit_partition> partitions;
};

struct offset_commit_request {
  static constexpr api_key key = api_key::offset_commit;
  std::string group_id;
  int32_t generation_id = -1;  ///< -1 with member "" for a standalone commit
  std::string member_id;
  std::optional<std::string> group_instance_id;  ///< v7+ (KIP-345)
  int64_t retention_time_ms = -1;  ///< v2-4 only
  std::vector<offset_commit_topic> topics;
};

struct offset_commit_partition_response {
  int32_t partition_index = 0;
  int16_t error_code = 0;
};

struct offset_commit_topic_response {
  std::string name;
  std::vector<offset_commit_partition_response> partitions;
};

struct offset_commit_response {
  static constexpr api_key key = api_key::offset_commit;
  int32_t throttle_time_ms = 0;  ///< v3+
  std::vector<offset_commit_topic_response> topics;
};

// ---- OffsetFetch (key 9) ----

struct offset_fetch_topic {
  std::string name;
  std::vector<int32_t> partition_indexes;
};

struct offset_fetch_request {
  static constexpr api_key key = api_key::offset_fetch;
  std::string group_id;
  /// v2+: nullopt = every committed partition of the group. v1 has no null
  /// (nullopt encodes as an empty array, which decodes as an empty vector).
  std::optional<std::vector<offset_fetch_topic>> topics;
};

struct offset_fetch_partition_response {
  int32_t partition_index = 0;
  int64_t committed_offset = -1;  ///< -1: nothing committed
  std::optional<std::string> metadata;
  int16_t error_code = 0;
};

struct offset_fetch_topic_response {
  std::string name;
  std::vector<offset_fetch_partition_response> partitions;
};

struct offset_fetch_response {
  static constexpr api_key key = api_key::offset_fetch;
  int32_t throttle_time_ms = 0;  ///< v3+
  std::vector<offset_fetch_topic_response> topics;
  int16_t error_code = 0;  ///< v2+ (top level)
};

bool decode(reader& r, int16_t version, describe_groups_request& out);
bool encode(writer& w, int16_t version, const describe_groups_request& in);
bool decode(reader& r, int16_t version, describe_groups_response& out);
bool encode(writer& w, int16_t version, const describe_groups_response& in);
bool decode(reader& r, int16_t version, list_groups_request& out);
bool encode(writer& w, int16_t version, const list_groups_request& in);
bool decode(reader& r, int16_t version, list_groups_response& out);
bool encode(writer& w, int16_t version, const list_groups_response& in);
bool decode(reader& r, int16_t version, delete_groups_request& out);
bool encode(writer& w, int16_t version, const delete_groups_request& in);
bool decode(reader& r, int16_t version, delete_groups_response& out);
bool encode(writer& w, int16_t version, const delete_groups_response& in);
bool decode(reader& r, int16_t version, offset_delete_request& out);
bool encode(writer& w, int16_t version, const offset_delete_request& in);
bool decode(reader& r, int16_t version, offset_delete_response& out);
bool encode(writer& w, int16_t version, const offset_delete_response& in);
bool decode(reader& r, int16_t version, find_coordinator_request& out);
bool encode(writer& w, int16_t version, const find_coordinator_request& in);
bool decode(reader& r, int16_t version, find_coordinator_response& out);
bool encode(writer& w, int16_t version, const find_coordinator_response& in);
bool decode(reader& r, int16_t version, join_group_request& out);
bool encode(writer& w, int16_t version, const join_group_request& in);
bool decode(reader& r, int16_t version, join_group_response& out);
bool encode(writer& w, int16_t version, const join_group_response& in);
bool decode(reader& r, int16_t version, sync_group_request& out);
bool encode(writer& w, int16_t version, const sync_group_request& in);
bool decode(reader& r, int16_t version, sync_group_response& out);
bool encode(writer& w, int16_t version, const sync_group_response& in);
bool decode(reader& r, int16_t version, heartbeat_request& out);
bool encode(writer& w, int16_t version, const heartbeat_request& in);
bool decode(reader& r, int16_t version, heartbeat_response& out);
bool encode(writer& w, int16_t version, const heartbeat_response& in);
bool decode(reader& r, int16_t version, leave_group_request& out);
bool encode(writer& w, int16_t version, const leave_group_request& in);
bool decode(reader& r, int16_t version, leave_group_response& out);
bool encode(writer& w, int16_t version, const leave_group_response& in);
bool decode(reader& r, int16_t version, offset_commit_request& out);
bool encode(writer& w, int16_t version, const offset_commit_request& in);
bool decode(reader& r, int16_t version, offset_commit_response& out);
bool encode(writer& w, int16_t version, const offset_commit_response& in);
bool decode(reader& r, int16_t version, offset_fetch_request& out);
bool encode(writer& w, int16_t version, const offset_fetch_request& in);
bool decode(reader& r, int16_t version, offset_fetch_response& out);
bool encode(writer& w, int16_t version, const offset_fetch_response& in);

}  // namespace moonmq::kafka
