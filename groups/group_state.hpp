#pragma once
// One consumer group's membership for the HTTP client API (CONTRACT §3):
// members join with their topics, the broker computes every member's
// assignment itself (Kafka's RangeAssignor, no SyncGroup round), members
// heartbeat to learn the current generation and assignment, and members whose
// session ran out are evicted. Pure: no threads, no I/O, no clocks — the
// caller passes the time in milliseconds and drives expire().
//
// States (a subset of Kafka's GroupCoordinator): `empty` (no members) and
// `stable`. Kafka's PreparingRebalance and CompletingRebalance collapse into
// the single call that changes the membership: every rebalance completes
// synchronously inside join/leave/expire/set_partition_count.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "groups/range_assignor.hpp"
#include "groups/types.hpp"

namespace moonmq::groups {

/// Partition count of `topic`, or nullopt when the topic does not exist.
using topic_lookup = std::function<std::optional<int32_t>(const std::string& topic)>;

/// A lookup answering from a fixed map (tests, snapshots).
topic_lookup lookup_from(partition_counts counts);

struct group_config {
  /// A member whose last join/heartbeat is this old is evicted by expire().
  /// Milliseconds, > 0. Default 10 s (Kafka's group.min.session.timeout.ms
  /// is 6 s, librdkafka's default session is 45 s).
  int64_t session_timeout_ms = 10'000;
  /// Seed for the random part of generated member ids; the broker passes a
  /// random value, tests a fixed one (ids are then deterministic).
  uint64_t id_seed = 0;
};

enum class group_phase { empty, stable };

/// Why the generation last changed (logged and shown by describe()).
enum class rebalance_reason { none, member_joined, member_left, member_evicted, subscription_changed,
                              partitions_changed };

const char* to_string(group_phase p);
const char* to_string(rebalance_reason r);

/// What join and heartbeat answer: CONTRACT §3's
/// {"member_id","generation","assignment":{"topic":[partitions]}}.
struct membership {
  std::string member_id;
  generation gen;
  assignment assigned;
};

/// One member as described to the admin API.
struct member_info {
  std::string member_id;
  std::set<std::string> topics;
  int64_t last_seen_ms = 0;  ///< time of the last join or heartbeat
  assignment assigned;
};

class group_state {
 public:
  /// `group_id` must be valid (see validate_group_id; checked by the caller,
  /// which owns the map of groups). `lookup` gives partition counts at join.
  group_state(std::string group_id, group_config config, topic_lookup lookup);

  /// Joins the group. Without `member_id` (or with an empty one) a new member
  /// is created with a generated id "m-<n>-<16 hex digits>" (n counts joins
  /// of this group object; the hex part comes from config.id_seed and n), the
  /// generation is bumped and every assignment recomputed. With the id of a
  /// current member, its subscription is replaced: the generation is bumped
  /// only when its topic set changed (or a topic's partition count did).
  /// `topics` is deduplicated and must not be empty.
  /// Errors: invalid_argument (no topics, empty topic name), unknown_topic
  /// (the lookup does not know a topic; nothing changes), unknown_member (an
  /// id that is not a current member, as Kafka's JoinGroup: rejoin without
  /// an id).
  result<membership> join(const std::optional<std::string>& member_id, const std::vector<std::string>& topics,
                          int64_t now_ms);

  /// Records a heartbeat at `now_ms` and answers the current generation and
  /// the member's assignment. Errors: unknown_member (never joined, left, or
  /// evicted: the client should rejoin without an id).
  result<membership> heartbeat(const std::string& member_id, int64_t now_ms);

  /// Removes a member; bumps the generation (also when the group becomes
  /// empty, so the last member's stale commits stay fenced). Errors:
  /// unknown_member.
  status leave(const std::string& member_id);

  /// Evicts every member with now_ms >= last_seen + session_timeout_ms (the
  /// deadline rule of Kafka's GroupCoordinator); one generation bump for the
  /// whole batch. Returns the evicted ids, sorted (empty: nothing changed).
  std::vector<std::string> expire(int64_t now_ms);

  /// Applies a new partition count for `topic` (a topic grew). When some
  /// member subscribes to it and the count differs from the one in use, the
  /// generation is bumped and assignments recomputed; returns whether that
  /// happened. Errors: invalid_argument (count <= 0).
  result<bool> set_partition_count(const std::string& topic, int32_t count);

  /// Commit fencing as Kafka's OffsetCommit: a given member must be current
  /// (else unknown_member) and a given generation must equal the current one
  /// (else illegal_generation). Neither given: allowed (a plain commit).
  status check_commit(const std::optional<std::string>& member_id, const std::optional<generation>& gen) const;

  const std::string& id() const { return id_; }
  generation current_generation() const { return generation_; }
  group_phase phase() const { return members_.empty() ? group_phase::empty : group_phase::stable; }
  rebalance_reason last_rebalance() const { return last_reason_; }
  size_t member_count() const { return members_.size(); }
  bool has_member(const std::string& member_id) const { return members_.count(member_id) != 0; }
  /// Partition counts in use for the subscribed topics.
  const partition_counts& counts() const { return counts_; }
  /// Every member, sorted by id.
  std::vector<member_info> describe() const;

 private:
  struct member {
    std::set<std::string> topics;
    int64_t last_seen_ms = 0;
  };

  std::string next_member_id();
  void rebalance(rebalance_reason why);
  membership answer(const std::string& member_id) const;

  std::string id_;
  group_config config_;
  topic_lookup lookup_;
  std::map<std::string, member> members_;
  partition_counts counts_;
  group_assignment assignments_;
  generation generation_;
  rebalance_reason last_reason_ = rebalance_reason::none;
  uint64_t joins_ = 0;
};

}  // namespace moonmq::groups
