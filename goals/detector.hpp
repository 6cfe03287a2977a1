#pragma once
// The detector: runs goals in priority order against one snapshot and turns
// the accepted actions into a plan (DESIGN §4; the loop structure follows
// Cruise Control's GoalOptimizer: each goal optimizes in turn, and an action
// is accepted only if every goal optimized before it accepts it).

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "goals/goal.hpp"
#include "goals/model.hpp"
#include "goals/outcome.hpp"
#include "goals/snapshot.hpp"

namespace moonmq::goals {

/// A goal with its effective configuration for one plan.
struct goal_binding {
  const goal* impl = nullptr;
  goal_config config;
};

/// One step of the plan. Actions are merged per partition: the plan holds at
/// most one action per partition, from its starting owner to its final owner
/// (A→B then B→C becomes A→C; A→B→A disappears). `goal`/`reason` come from
/// the last goal that moved it. An accepted SWAP appears as two actions of
/// type SWAP, one per partition, each naming the other in `swap_with`; each
/// is executed as a move of its own partition (from → to), like a MOVE. A
/// half whose partner was moved on by a later action, or went back to its
/// starting owner, is a MOVE.
struct plan_action {
  action_type type = action_type::move;
  /// SWAP: the partition going the other way (from `to` to `from`).
  std::optional<topic_partition> swap_with;
  std::string topic;
  std::int32_t partition = 0;
  std::string from;
  std::string to;
  std::string goal;
  std::string reason;
  replica_index replica;
  broker_index from_index;
  broker_index to_index;
};

/// Per-goal outcome (CONTRACT §6 plan.goals[]). `before` is measured on the
/// snapshot as frozen, `after` once every goal has run.
struct goal_report {
  std::string name;
  bool hard = false;
  int priority = 0;
  goal_stats before;
  goal_stats after;
  std::string explanation;
  std::size_t accepted = 0;  // proposals of this goal that were applied
  std::size_t rejected = 0;  // proposals refused by a rule or another goal
  /// Per broker still outside after the plan (after.violators, same order):
  /// why, from the refusals of this goal's proposals that moved a partition
  /// off or onto it (by goal or rule, with one refusal's text; "then
  /// max_actions was reached" added when the plan was full as the goal
  /// ended); with no refusal, "max_actions reached before this broker was
  /// handled" when the plan was full, else that nothing was proposed (for a
  /// built-in distribution goal, why its search found nothing).
  struct outside { broker_index broker; std::string why; };
  std::vector<outside> still_outside;
};

/// Per-broker figures: loads indexed by resource (nw_in, nw_out, disk, partitions).
using broker_loads = std::vector<std::array<double, kResourceCount>>;

/// The drain phase of a plan (docs/balancer.md "Drain"): partitions moved
/// off draining brokers before any goal ran, and those still on them.
struct drain_report {
  std::vector<std::string> brokers;  ///< the draining brokers
  std::size_t moved = 0;             ///< partitions this plan moves off them
  std::size_t left = 0;              ///< partitions still on them after this plan
  std::string explanation;
};

struct plan {
  std::vector<plan_action> actions;
  /// Set when some broker is draining.
  std::optional<drain_report> drain;
  std::vector<goal_report> goals;
  std::vector<std::string> broker_ids;
  broker_loads brokers_before;
  broker_loads brokers_after;
  double balancedness_before = 100.0;
  double balancedness_after = 100.0;
  /// One sentence; says why nothing moved when the plan is empty.
  std::string summary;
  /// Fewest moves any plan needs to bring PARTITION_COUNT in band: the
  /// larger of Σ max(0, count − upper) and Σ max(0, lower − count) over
  /// eligible brokers, in whole partitions, on the snapshot before the plan
  /// (a move lowers each sum by at most one). Unset when that goal is not
  /// run or is idle.
  std::optional<std::size_t> count_moves_lower_bound;
};

/// Orders `goals` for a run: enabled only, by priority (higher first), ties by name.
std::vector<goal_binding> order_goals(std::vector<goal_binding> goals);

/// `goals` bound to their effective config for `model` (each goal's
/// defaults with `model.goals`' overrides; null entries and goals named only
/// in the model are ignored), ordered by order_goals: what make_plan runs.
/// With `model.shared_storage`, before the overrides: DISK and
/// DISK_CAPACITY are disabled (a broker holds no partition bytes on its own
/// disk) and NW_IN, NW_OUT and PARTITION_COUNT take AvgDeviation
/// kSharedStorageAvgDeviation; an override in `model.goals` still wins.
std::vector<goal_binding> bind_goals(const cluster_model& model, const std::vector<const goal*>& goals);

/// The cap on moved partitions of a plan of `model` frozen as `s`:
/// `model.max_actions` (MaxActionsPerDetect); with `model.shared_storage`,
/// at least Σ over eligible brokers of max(0, floor(m) − count), m the mean
/// partition count of eligible brokers: the partitions the brokers below
/// the mean lack, so a new (empty) broker gets its share in one pass
/// instead of MaxActionsPerDetect per pass while it warms up in between.
/// Moves are still bounded by a count, never by bytes (none is copied).
/// A `max_actions` of 0 (no move at all) is never raised.
std::size_t shared_storage_cap(const cluster_model& model, const snapshot& s);

/// The brokers of `s` that may receive a drained partition
/// (snapshot::drain_target: alive, not excluded, not draining, not slow),
/// in broker order.
std::vector<broker_index> drain_targets(const snapshot& s);

/// How place_drained weighs cluster_model::avoid against the spread.
enum class avoid_rank {
  /// Targets the partition avoids come last whatever their counts: a drain
  /// of a live broker does not undo a recent move when it can help it.
  first,
  /// Fewest partitions first, the avoided rule only between equal counts:
  /// a failover (shared storage) must leave a dead broker anyway, and a
  /// recent move onto it (which makes its source avoided) would otherwise
  /// send every partition of the dead broker to the same survivor.
  after_count,
};

/// Moves replica `r` of `s` to the first of `targets` that every hard goal
/// of `goals` accepts, trying first the targets `r` does not avoid
/// (cluster_model::avoid), then fewest partitions, least NW_IN, broker
/// order: the drain's choice (docs/balancer.md "Drain"). With
/// avoid_rank::after_count, fewest partitions first, then not avoided,
/// then least NW_IN, broker order (the failover's choice). Returns the
/// destination; nullopt, with `s` unchanged, when no target accepts it.
/// Movability is the caller's business (the drain skips internal and
/// moving partitions; failover places internal ones too).
std::optional<broker_index> place_drained(snapshot& s, const std::vector<goal_binding>& goals, replica_index r,
                                          const std::vector<broker_index>& targets,
                                          avoid_rank avoided = avoid_rank::first);

/// Runs `goals` (see order_goals; the order given is used as is) on `s`,
/// which is left in the planned state. At most `max_actions` partitions move.
/// Draining brokers are emptied first: each drainable partition of one goes
/// to the drain target with the fewest partitions (then the least NW_IN
/// load, then the first in broker order) that every hard goal accepts,
/// a target the partition avoids (cluster_model::avoid) only when no other
/// one accepts it; the goals then run with the draining brokers ineligible
/// and never move a partition to a broker it avoids. This is the order of
/// Cruise Control's remove_broker, which relocates the removed brokers'
/// replicas ahead of optimizing its goals.
plan run_detector(snapshot& s, const std::vector<goal_binding>& goals, std::size_t max_actions);

/// Balancedness 0–100 of `s` for `goals` (ordered as run):
///   score = 100 · Σ w_g · (1 − violators_g / eligible) / Σ w_g,
///   w_g = 1.1^(n − 1 − rank_g) · (hard ? 1.5 : 1),
/// an idle goal counting as fully satisfied; 100 with no goal or no eligible
/// broker. The priority (1.1) and strictness (1.5) weights are Cruise
/// Control's balancedness weights; the per-goal term is the share of brokers
/// in band instead of a pass/fail so the score moves with partial progress.
double balancedness(const snapshot& s, const std::vector<goal_binding>& goals);

/// Freezes `model`, binds each goal to its config (defaults with the model's
/// overrides), orders them and runs the detector. Goals named in the model
/// but not given are ignored. Errors: the model's validation error.
outcome<plan> make_plan(const cluster_model& model, const std::vector<const goal*>& goals);

}  // namespace moonmq::goals
