#pragma once
// Failover in shared-storage mode (docs/balancer.md "Failover (shared
// storage)", docs/shared-storage.md "Moves and failover"). Partition data
// lives on a directory every broker mounts, so a dead broker's partitions
// serve again as soon as the metadata log names another owner. Which
// partitions go and where is decided here, purely: the Raft leader selects
// the partitions of brokers that are fenced and have been silent on it for
// the lease wait, then places each with the drain's choice (the drain
// targets every hard goal accepts, fewest partitions first). The balance
// loop proposes the result as owner entries conditional on the epochs read.
// The model is Cruise Control's self-healing for dead brokers and AutoMQ's
// failover of a failed broker's partitions over shared storage.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "goals/goal.hpp"
#include "goals/model.hpp"
#include "goals/outcome.hpp"
#include "goals/types.hpp"

namespace moonmq::goals {

/// One owned partition of the applied metadata image: its owner and owner
/// epoch (docs/metadata.md "Owner epochs"; 1 from the partition's creation).
struct owner_row {
  topic_partition tp;
  std::string owner;
  std::int64_t epoch = 1;
};

/// What the controller reads before a failover, all from one applied image
/// but `silent_ms` (the Raft leader's own count).
struct failover_view {
  /// Owned partitions (rows of other brokers than the fenced ones may be
  /// left out: they are ignored).
  std::vector<owner_row> owners;
  /// Brokers the metadata log has fenced (broker_standing::fenced).
  std::set<std::string> fenced;
  /// On the Raft leader: how long each peer has been silent, in ms
  /// (raft_status::silent_ms: silent ticks × tick length, counted again from
  /// 0 when this broker became leader). A fenced broker missing here is
  /// never failed over: its silence is not known.
  std::map<std::string, std::int64_t> silent_ms;
  /// How long a fenced broker must have been silent, in ms: LeaseMs +
  /// LeaseMarginMs (docs/shared-storage.md "The lease"), so that its lease
  /// has run out before another broker writes its partitions.
  std::int64_t wait_ms = 3500;
  /// Partitions not to hand over now: an unfinished move in the image
  /// (ended first by its own rules, then picked up by a later pass), or a
  /// failover proposal of this controller still unanswered.
  std::set<topic_partition> held;
};

/// The partitions a failover hands over now.
struct failover_selection {
  /// Fenced brokers silent for at least wait_ms that own partitions, in id order.
  std::vector<std::string> brokers;
  /// Their silence, in ms.
  std::map<std::string, std::int64_t> silent_ms;
  /// Their partitions to hand over, in (topic, partition) order, each with
  /// the owner epoch read: the epoch the owner entry must expect.
  std::vector<owner_row> partitions;
  /// Their partitions in `failover_view::held`, left for a later pass.
  std::vector<owner_row> held;
  /// Fenced brokers that own partitions but whose silence is shorter than
  /// wait_ms or unknown: nothing of theirs moves yet.
  std::vector<std::string> waiting;
  /// Every fenced broker: none of them may receive a partition.
  std::set<std::string> fenced;
  /// failover_view::wait_ms, in ms.
  std::int64_t wait_ms = 0;
};

/// Selects the failover of `v`: the partitions of every fenced broker
/// silent for at least `v.wait_ms`, internal (`__`) topics included (they
/// would stay offline otherwise), those in `v.held` left out. Empty
/// `partitions` when no fenced broker qualifies.
failover_selection select_failover(const failover_view& v);

/// One owner change of a failover: `tp` from the fenced broker `from` to
/// `to`, conditional on the partition still being at `expect_epoch`.
struct failover_action {
  topic_partition tp;
  std::string from;
  std::string to;
  std::int64_t expect_epoch = 1;
  std::string reason;  ///< "broker b3 is fenced and silent for 4200 ms (wait 3500 ms)"
};

struct failover_plan {
  std::vector<failover_action> actions;
  /// Selected partitions no destination takes (no drain target, or none
  /// every hard goal accepts): they stay offline until a later pass.
  std::vector<owner_row> unplaced;
  /// One sentence: how many partitions go from which brokers, how many wait.
  std::string explanation;
};

/// Places every partition of `sel` with the drain's choice
/// (goals::place_drained): onto brokers of `model` that are alive, not
/// fenced, not excluded, not draining and not slow, accepted by every hard
/// goal of `goals` (soft goals are not consulted), spreading them by
/// partition count (internal partitions included), then not avoided
/// (cluster_model::avoid only breaks ties: the dead broker must be left),
/// then NW_IN (goals::avoid_rank::after_count). `model` is the balance loop's: the selected
/// brokers are made draining and not alive (added when missing), every
/// fenced broker not alive, each selected partition owned by its fenced
/// owner (added with zero load when the model lacks it: a controller that
/// restarted has no samples of a dead broker), and a move in flight of a
/// selected partition dropped (the image shows none). Not bounded by
/// `max_actions`: availability, and no byte is copied. Errors: the
/// adjusted model's validation error.
outcome<failover_plan> plan_failover(cluster_model model, const std::vector<const goal*>& goals,
                                     const failover_selection& sel);

/// The actions of `p` whose source is still silent for at least `wait_ms`
/// in `silent_ms` (the leader's count read again right before proposing):
/// a broker that answered in between keeps its partitions.
std::vector<failover_action> still_silent(const failover_plan& p, const std::map<std::string, std::int64_t>& silent_ms,
                                          std::int64_t wait_ms);

/// Counts each action of `p` at its destination in `model` (as a move in
/// flight, the partition added with zero load when missing), so that the
/// goals of the same pass neither move it again nor count it on the dead
/// broker.
void add_failover_moves(cluster_model& model, const failover_plan& p);

}  // namespace moonmq::goals
