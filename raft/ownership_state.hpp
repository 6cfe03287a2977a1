#pragma once
// The applied state machine of the controller log (the "_stm" of the raft
// module): the topics, the ownership table topic-partition -> owner and the
// current controller, built by applying committed entries in index order.
// This is the broker's metadata image (DESIGN §9): a partition is owned by a
// broker only when this table names it.

#include <map>
#include <set>
#include <optional>

#include "raft/result.hpp"
#include "raft/types.hpp"

namespace moonmq::raft {

class ownership_state {
 public:
  /// Applies `e`, which must be the entry right after applied_index()
  /// (index applied_index() + 1). Returns errc::invalid_argument, leaving the
  /// state unchanged, for an out-of-order entry.
  status apply(const log_entry& e);

  /// Replaces the whole state with `s` (applied_index() becomes s.last_index).
  void load(const snapshot& s);

  /// The state as a snapshot at applied_index() / applied_term().
  snapshot to_snapshot() const;

  /// Owner recorded for (topic, partition), or nullopt when no entry names
  /// one (nobody serves such a partition).
  std::optional<node_id> owner_of(const topic_partition& tp) const;

  const std::map<topic_partition, node_id>& owners() const { return owners_; }
  /// The owner epoch of `tp` (docs/metadata.md "Owner epochs"): 1 from the
  /// entry that created the partition, bumped by every owner entry that
  /// applied; 0 for a partition no entry names an owner of.
  uint64_t epoch_of(const topic_partition& tp) const;
  /// Partitions whose epoch is above 1 (the rest are at 1, or 0 without owner).
  const std::map<topic_partition, uint64_t>& epochs() const { return epochs_; }
  /// True when the entry at index `i` was a no-op the log refused: a
  /// conditional owner entry whose expected epoch had moved on, an owner
  /// entry for a deleted topic, a move step or a topic deletion whose
  /// condition did not hold, a txn entry whose expected version had moved
  /// on. Remembered for the last max_refused_kept such entries since the
  /// last load().
  bool refused(log_index i) const { return refused_.count(i.value) != 0; }
  static constexpr std::size_t max_refused_kept = 4096;
  /// Every topic a `topic` entry created, by name.
  const std::map<std::string, topic_record>& topics() const { return topics_; }
  /// Topics a deletion dropped: name -> index of that entry, the newest
  /// max_deleted_topics_kept (a broker holding a local copy of one removes
  /// it rather than import it; docs/metadata.md "Deleting a topic").
  const std::map<std::string, log_index>& deleted_topics() const { return deleted_topics_; }
  static constexpr std::size_t max_deleted_topics_kept = 10000;
  /// The dynamic balancer settings, merged from every `config` entry (JSON
  /// object text, "{}" when none).
  const std::string& balancer() const { return balancer_; }
  /// Brokers the controller fenced (not heard from for the session timeout).
  const std::set<node_id>& fenced() const { return fenced_; }
  /// Brokers being drained (docs/metadata.md "Drain and removal"): the
  /// balancer moves their partitions off and places nothing on them.
  const std::set<node_id>& draining() const { return draining_; }
  /// Brokers removed from the cluster: never placed on, never coordinators.
  const std::set<node_id>& removed() const { return removed_; }
  /// Brokers that joined at runtime (a register entry), with their
  /// endpoints; a removed one stays here (and in removed()).
  const std::map<node_id, broker_endpoints>& registered() const { return registered_; }
  /// True when a placed create or growth may apply its `owners`: `checked`
  /// (the brokers its proposer knew to read them) holds every registered
  /// broker that is not removed. A broker of an earlier version that joined
  /// after the proposer looked would read the entry as all on `owner`, so
  /// then every broker does (docs/metadata.md "Placing a new topic's
  /// partitions"). The voters are a fixed list the proposer checked.
  bool placement_readable(const std::vector<node_id>& checked) const;
  /// The Kafka node id of each registered broker: given at its first
  /// register entry that asks for one, in log order, from
  /// first_joined_kafka_node_id up, and kept for good (a re-registration or
  /// removal never renumbers anyone). Brokers registered before ids were
  /// given have none until they register again.
  const std::map<node_id, int32_t>& kafka_node_ids() const { return kafka_node_ids_; }
  /// Moves by id (docs/cluster.md "Moves in the log"): every unfinished one,
  /// and the last max_finished_moves_kept finished ones.
  const std::map<std::string, move_record>& moves() const { return moves_; }
  static constexpr std::size_t max_finished_moves_kept = 1000;
  /// Transactional ids and their state (docs/transactions.md), by id.
  const std::map<std::string, cluster::txn_record>& transactions() const { return txns_; }
  /// Index of the last entry (or loaded snapshot) that changed
  /// transactions(): equal indexes mean equal transactions, so a reader can
  /// skip copying them when this has not moved.
  log_index transactions_changed_at() const { return txns_changed_at_; }
  /// The unfinished move of `tp`, if any (its id).
  std::optional<std::string> active_move(const topic_partition& tp) const;
  /// Partitions the table names `b` owner of.
  std::size_t owned_by(const node_id& b) const;
  /// Leader named by the last applied controller entry ("" before any).
  const node_id& controller() const { return controller_; }
  log_index applied_index() const { return applied_index_; }
  term applied_term() const { return applied_term_; }

  friend bool operator==(const ownership_state& a, const ownership_state& b) {
    return a.applied_index_ == b.applied_index_ && a.applied_term_ == b.applied_term_ &&
           a.controller_ == b.controller_ && a.owners_ == b.owners_ && a.topics_ == b.topics_ &&
           a.balancer_ == b.balancer_ && a.fenced_ == b.fenced_ && a.draining_ == b.draining_ &&
           a.removed_ == b.removed_ && a.registered_ == b.registered_ &&
           a.kafka_node_ids_ == b.kafka_node_ids_ && a.epochs_ == b.epochs_ && a.moves_ == b.moves_ &&
           a.deleted_topics_ == b.deleted_topics_ && a.txns_ == b.txns_;
  }

 private:
  /// Applies a move entry (true) or refuses it (false), as move_entry says.
  bool apply_move(const move_entry& m, log_index at);
  /// Applies a topic deletion (true) or refuses it (false), as topic_entry says.
  bool apply_topic_delete(const topic_entry& t, log_index at);
  /// Sets the owner of `tp`, bumping its owner epoch.
  void set_owner(const topic_partition& tp, const node_id& owner);

  std::map<topic_partition, node_id> owners_;
  std::map<std::string, move_record> moves_;
  std::map<std::string, topic_record> topics_;
  std::map<std::string, log_index> deleted_topics_;
  std::map<std::string, cluster::txn_record> txns_;
  log_index txns_changed_at_;
  std::string balancer_ = "{}";
  std::set<node_id> fenced_;
  std::set<node_id> draining_;
  std::set<node_id> removed_;
  std::map<node_id, broker_endpoints> registered_;
  std::map<node_id, int32_t> kafka_node_ids_;
  std::map<topic_partition, uint64_t> epochs_;  ///< only partitions above epoch 1
  std::set<uint64_t> refused_;                  ///< indexes of refused conditional entries
  node_id controller_;
  log_index applied_index_;
  term applied_term_;
};

}  // namespace moonmq::raft
