#pragma once
// The Kafka consumer groups' membership (docs/kafka.md "Consumer groups"):
// JoinGroup, SyncGroup, Heartbeat and LeaveGroup with Kafka's client-side
// assignment protocol, in the states of Kafka's GroupCoordinator (Empty,
// PreparingRebalance, CompletingRebalance, Stable: only the leader
// receives the member list, SyncGroup distributes its assignments), static
// membership (KIP-345) and the initial delayed join
// (group.initial.rebalance.delay.ms). Pure: no threads, no I/O, no clocks —
// the caller passes a monotonic time in milliseconds and drives tick(). The
// group coordinator actor owns it (actors/group_coordinator.hpp); one owner
// calls it.
//
// JoinGroup and SyncGroup may park until the round completes: their reply
// callbacks are then called by a later call (another member's join or
// sync, a leave, tick). No callback is called during a call: each call
// appends the replies it completes to `out`, for the caller to run after
// it returns.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kafka/codec.hpp"

namespace moonmq::groups {

/// Whether a commit by (member, instance, generation) of `group` may go
/// ahead (OffsetCommit, TxnOffsetCommit's group check).
struct kafka_commit_check {
  std::string group;
  std::string member;                   ///< "" with no instance and generation -1: a standalone commit
  std::optional<std::string> instance;  ///< the group instance id (KIP-345)
  int32_t generation = -1;
};

/// For OffsetDelete (KIP-496): whether a group has members, whether it uses
/// the "consumer" protocol type, and the topics its members subscribe to
/// (each member's metadata for its protocols, in Kafka's
/// ConsumerProtocolSubscription layout: version, [topic], ...).
struct kafka_subscription {
  bool exists = false;  ///< the membership knows the group (members or not)
  bool has_members = false;
  bool consumer = true;
  std::set<std::string> topics;
};

class kafka_membership {
public:
  /// Replies completed by a call, to run once it returned.
  using actions = std::vector<std::function<void()>>;
  using join_reply = std::function<void(kafka::join_group_response)>;
  using sync_reply = std::function<void(kafka::sync_group_response)>;

  /// `initial_rebalance_delay_ms`: Kafka's group.initial.rebalance.delay.ms,
  /// how long the first round of an Empty group waits for more members
  /// (tick() closes it; 0 = at once).
  explicit kafka_membership(int64_t initial_rebalance_delay_ms = 0);

  /// `client_host`: "/<address>" of the member's connection (DescribeGroups).
  /// Static membership (KIP-345): a request naming a group instance id whose
  /// member id is now another one gets 82 FENCED_INSTANCE_ID (also
  /// SyncGroup, Heartbeat, LeaveGroup, OffsetCommit); a known instance
  /// joining without a member id takes its member over (docs/kafka.md).
  void join(const kafka::join_group_request& req, const std::string& client_id, int16_t version,
            const std::string& client_host, join_reply reply, int64_t now_ms, actions& out);
  void sync(const kafka::sync_group_request& req, sync_reply reply, int64_t now_ms, actions& out);
  /// 0, 25 UNKNOWN_MEMBER_ID, 82 FENCED_INSTANCE_ID, 22 ILLEGAL_GENERATION
  /// or 27 REBALANCE_IN_PROGRESS.
  int16_t heartbeat(const kafka::heartbeat_request& req, int64_t now_ms);
  /// Removes `member` (and rebalances the rest): 0, 25 UNKNOWN_MEMBER_ID, or
  /// 82 FENCED_INSTANCE_ID when `instance` is now another member's. Member
  /// "" with an `instance`: removes that static member (LeaveGroup v3+).
  int16_t leave(const std::string& group, const std::string& member, const std::optional<std::string>& instance,
                int64_t now_ms, actions& out);
  /// LeaveGroup as a whole: v0-2 name one member and answer its error at
  /// the top level; v3+ name a batch, by member id or group instance id,
  /// and answer each one's error.
  kafka::leave_group_response leave(const kafka::leave_group_request& req, int16_t version, int64_t now_ms,
                                    actions& out);
  /// 0 when the commit may go ahead (a standalone commit always may), else
  /// 22 / 25 / 82 / 27 (27 only in CompletingRebalance).
  int16_t check_commit(const kafka_commit_check& c) const;
  /// Expires silent members and completes overdue rebalances.
  void tick(int64_t now_ms, actions& out);
  /// Every group with its protocol type (ListGroups).
  std::vector<kafka::listed_group> list() const;
  /// One group as DescribeGroups shows it: state "Dead" and no members when
  /// the membership does not know it; protocol, member metadata and
  /// assignments only while Stable (Kafka's GroupMetadata.summary).
  kafka::described_group describe_group(const std::string& id) const;
  kafka_subscription subscribed(const std::string& group) const;
  /// Forgets `group` when it has no member (DeleteGroups): 0, with
  /// `existed` telling whether it was known; 68 NON_EMPTY_GROUP (and
  /// nothing changes) while members are in it.
  int16_t remove_if_empty(const std::string& group, bool& existed);
  /// [{"id","state","generation","protocol","leader","members"}] (member
  /// and client ids are a client's bytes: dump with error_handler replace).
  nlohmann::json describe() const;

private:
  enum class phase { empty, preparing, completing, stable };
  struct member {
    std::string id;
    std::optional<std::string> instance_id;
    int64_t session_ms = 45000;
    int64_t rebalance_ms = 300000;
    std::vector<kafka::join_group_protocol> protocols;
    int64_t seen_ms = 0;
    join_reply join;  ///< parked JoinGroup
    sync_reply sync;  ///< parked SyncGroup
    std::string assignment;
    std::string client_id;    ///< of its last JoinGroup (DescribeGroups)
    std::string client_host;  ///< "/<address>" of the connection of its last JoinGroup
  };
  struct group {
    phase state = phase::empty;
    int32_t generation = 0;
    std::string protocol_type;
    std::string protocol;
    std::string leader;
    std::map<std::string, member> members;
    /// KIP-345 static members: group instance id -> its current member id.
    std::map<std::string, std::string> statics;
    int64_t deadline_ms = 0;  ///< PreparingRebalance: when the join round closes
    /// The first round of a group that was Empty waits until then for more
    /// members (Kafka's InitialDelayedJoin); unset otherwise.
    std::optional<int64_t> initial_until_ms;
    int64_t initial_limit_ms = 0;  ///< the latest initial_until_ms may move to
  };

  static const char* name(phase p);
  static std::map<std::string, member>::iterator erase(group& g, std::map<std::string, member>::iterator it);
  static int16_t validate(const group& g, const std::string& member, const std::optional<std::string>& instance);
  static void refresh(member& m, const kafka::join_group_request& req, const std::string& client_id,
                      const std::string& client_host, int16_t version, int64_t now_ms);
  void prepare(group& g, int64_t now_ms, actions& out);
  void maybe_complete(group& g, bool force, int64_t now_ms, actions& out);
  std::string new_member_id(const std::string& client_id, int64_t now_ms);
  void rejoin_static(group& g, const std::string& old_id, const std::string& new_id,
                     const kafka::join_group_request& req, const std::string& client_id,
                     const std::string& client_host, int16_t version, join_reply reply, int64_t now_ms, actions& out);
  void remove(group& g, const std::string& who, int64_t now_ms, actions& out);

  int64_t initial_delay_ms_ = 0;
  std::map<std::string, group> groups_;
  uint64_t next_member_ = 0;
};

}  // namespace moonmq::groups
