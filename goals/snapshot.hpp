#pragma once
// A frozen, mutable copy of the cluster model for one planning pass.
// Flat vectors indexed by broker_index / replica_index; broker totals are
// kept incrementally by apply/undo, so every query below is O(1).

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "goals/model.hpp"
#include "goals/outcome.hpp"
#include "goals/types.hpp"

namespace moonmq::goals {

class snapshot {
 public:
  /// Validates and freezes `model`: in-flight moves are applied (and become
  /// the partitions' starting owner), cooldown and in-flight partitions,
  /// internal (`__`) and excluded topics and untrusted replicas are marked
  /// immovable, and `model.avoid` is indexed for avoided(). Errors name the offending element
  /// (e.g. "partitions[3].owner: unknown broker \"b9\"").
  static outcome<snapshot> freeze(const cluster_model& model);

  // --- brokers -----------------------------------------------------------
  std::size_t broker_count() const { return ids_.size(); }
  const std::string& broker_id(broker_index b) const { return ids_[b.value]; }
  std::optional<broker_index> find_broker(std::string_view id) const;
  bool alive(broker_index b) const { return alive_[b.value] != 0; }
  bool excluded(broker_index b) const { return excluded_[b.value] != 0; }
  /// Alive, not excluded, not warming, not draining and not slow: may
  /// receive partitions from goals, counts in the mean.
  bool eligible(broker_index b) const { return eligible_[b.value] != 0; }
  bool draining(broker_index b) const { return draining_[b.value] != 0; }
  /// May receive a drained partition: alive, not excluded, not draining,
  /// not slow.
  bool drain_target(broker_index b) const { return drain_target_[b.value] != 0; }
  /// Brokers being drained.
  std::size_t draining_count() const { return draining_count_; }
  /// Marked slow (broker_spec::slow), alive, not excluded and not draining:
  /// not eligible, yet a goal may move partitions off it (the SLOW_BROKER
  /// goal does). ABI 5.
  bool slow(broker_index b) const { return slow_[b.value] != 0; }
  /// Current load of broker `b` on `r` (sum of its replicas' loads).
  double load(broker_index b, resource r) const { return broker_load_[b.value][index_of(r)]; }
  /// Capacity of `b` for `r`; nullopt when unknown (always for PARTITION_COUNT).
  std::optional<double> capacity(broker_index b, resource r) const;
  /// broker_spec::weight of `b` (1 unless set). ABI 6.
  double weight(broker_index b) const { return weight_[b.value]; }
  /// broker_spec::rack of `b` ("" = none). ABI 6.
  const std::string& rack(broker_index b) const { return racks_[rack_[b.value]]; }
  /// True when `a` and `b` name the same rack (two brokers without one
  /// count as the same rack: a cluster without racks has no preference).
  bool same_rack(broker_index a, broker_index b) const { return rack_[a.value] == rack_[b.value]; }
  /// Sum of the eligible brokers' weights (eligible_count() when every weight is 1). ABI 6.
  double eligible_weight_total() const { return eligible_weight_; }
  /// True when some eligible broker's weight is not 1. ABI 6.
  bool weighted() const { return weighted_; }

  // --- eligible aggregates (constant while moves stay among eligible brokers)
  std::size_t eligible_count() const { return eligible_count_; }
  double eligible_total(resource r) const { return eligible_total_[index_of(r)]; }
  /// Sum of capacities of eligible brokers (0 unless all have one).
  double eligible_capacity_total(resource r) const { return eligible_capacity_[index_of(r)]; }
  /// True when every eligible broker has a positive capacity for `r`.
  bool eligible_all_have_capacity(resource r) const { return all_capacity_[index_of(r)]; }
  /// Sum over all brokers (eligible or not).
  double total_load(resource r) const;

  // --- replicas ------------------------------------------------------------
  std::size_t replica_count() const { return owner_.size(); }
  broker_index owner(replica_index r) const { return broker_index{owner_[r.value]}; }
  /// Owner when the snapshot was frozen (after in-flight moves).
  broker_index origin(replica_index r) const { return broker_index{origin_[r.value]}; }
  /// Load of replica `r` on `res` (1 for PARTITION_COUNT).
  double load(replica_index r, resource res) const {
    return res == resource::partition_count ? 1.0 : replica_load_[r.value][index_of(res)];
  }
  bool movable(replica_index r) const { return movable_[r.value] != 0; }
  /// May leave a draining broker: not moving already and not internal
  /// (cooldown, exclusion and an incomplete window do not hold a drain back).
  bool drainable(replica_index r) const { return drainable_[r.value] != 0; }
  const std::string& topic(replica_index r) const { return topics_[topic_[r.value]]; }
  std::int32_t partition(replica_index r) const { return partition_[r.value]; }
  std::optional<replica_index> find_replica(std::string_view topic, std::int32_t partition) const;
  /// True when `b` is an avoided destination of `r` (cluster_model::avoid).
  /// O(log k) in the number k of avoided pairs.
  bool avoided(replica_index r, broker_index b) const;
  // --- topics (docs/balancer.md "Topic spread") -------------------------------
  /// Topics are numbered 0 .. topic_count()-1 in order of first appearance.
  std::size_t topic_count() const { return topics_.size(); }
  std::uint32_t topic_id(replica_index r) const { return topic_[r.value]; }
  const std::string& topic_name(std::uint32_t t) const { return topics_[t]; }
  /// False for internal (`__`) and excluded topics: none of their partitions moves.
  bool topic_movable(std::uint32_t t) const { return topic_movable_[t] != 0; }
  /// The replicas of topic `t`, in replica index order: [first, last).
  const std::uint32_t* topic_replicas_begin(std::uint32_t t) const { return topic_members_.data() + topic_start_[t]; }
  const std::uint32_t* topic_replicas_end(std::uint32_t t) const { return topic_members_.data() + topic_start_[t + 1]; }
  /// Partitions of topic `t` on eligible brokers (kept by apply/undo).
  std::uint32_t topic_eligible_partitions(std::uint32_t t) const { return topic_eligible_[t]; }
  /// Partitions of topic `t` owned by `b`: O(1) for a topic with at least as
  /// many partitions as there are brokers (a count per broker is kept), else
  /// O(partitions of t) < O(brokers), so memory stays O(partitions).
  std::uint32_t topic_partitions_on(std::uint32_t t, broker_index b) const;

  /// Replicas whose owner differs from their origin.
  std::size_t moved_count() const { return moved_count_; }

  // --- mutation --------------------------------------------------------------
  /// Applies a MOVE or SWAP. Returns false (and changes nothing) when the
  /// action does not match the current state (wrong owner, same broker,
  /// out-of-range index). Movability and eligibility are the detector's
  /// business, not checked here.
  bool apply(const action& a);
  /// Reverts an action applied last (or any action whose result is the
  /// current state); false and no change when it does not match.
  bool undo(const action& a);

 private:
  snapshot() = default;
  bool valid_broker(broker_index b) const { return b.value < ids_.size(); }
  bool valid_replica(replica_index r) const { return r.value < owner_.size(); }
  void move_replica(std::uint32_t r, std::uint32_t to);
  /// Builds the per-topic replica lists, count rows and eligible counts from owner_.
  void index_topics(const std::vector<std::uint8_t>& movable);

  std::vector<std::string> ids_;
  std::vector<std::uint8_t> alive_;
  std::vector<std::uint8_t> excluded_;
  std::vector<std::uint8_t> eligible_;
  std::vector<std::uint8_t> draining_;
  std::vector<std::uint8_t> drain_target_;
  std::size_t draining_count_ = 0;
  std::vector<std::array<double, kResourceCount>> broker_load_;
  std::vector<std::array<double, kMeasuredResources>> capacity_;  // < 0: unknown
  std::unordered_map<std::string, std::uint32_t> broker_by_id_;

  std::vector<std::uint32_t> owner_;
  std::vector<std::uint32_t> origin_;
  std::vector<std::array<double, kMeasuredResources>> replica_load_;
  std::vector<std::uint32_t> topic_;
  std::vector<std::int32_t> partition_;
  std::vector<std::uint8_t> movable_;
  std::vector<std::uint8_t> drainable_;
  std::vector<std::string> topics_;
  std::unordered_map<std::string, std::uint32_t> topic_by_name_;
  std::unordered_map<std::uint64_t, std::uint32_t> replica_by_key_;
  std::vector<std::uint64_t> avoided_;  // sorted (replica << 32 | broker)

  std::size_t eligible_count_ = 0;
  std::array<double, kResourceCount> eligible_total_{};
  std::array<double, kResourceCount> eligible_capacity_{};
  std::array<bool, kResourceCount> all_capacity_{};
  std::size_t moved_count_ = 0;
  // Topic index, last so that the members above keep their offsets for
  // goal plugins built against the earlier header (same ABI version).
  std::vector<std::uint8_t> topic_movable_;
  std::vector<std::uint32_t> topic_start_;    // topic t's replicas: topic_members_[start[t], start[t+1])
  std::vector<std::uint32_t> topic_members_;
  std::vector<std::uint32_t> topic_eligible_;
  std::vector<std::uint32_t> topic_row_;      // offset of t's per-broker counts in topic_counts_, or kNoRow
  std::vector<std::uint32_t> topic_counts_;
  static constexpr std::uint32_t kNoRow = 0xffffffffu;
  // Slow brokers (ABI 5), last for the same reason.
  std::vector<std::uint8_t> slow_;
  // Weights and racks (ABI 6), last for the same reason.
  std::vector<double> weight_;
  std::vector<std::uint32_t> rack_;  // index into racks_
  std::vector<std::string> racks_;   // distinct rack names, first appearance order
  double eligible_weight_ = 0.0;
  bool weighted_ = false;
};

}  // namespace moonmq::goals
