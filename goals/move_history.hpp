#pragma once
// The reassignment journal as planner input: which partitions are moving,
// which must stay still, and which brokers each must not move to
// (docs/balancer.md "Stability rules"). Pure: the balance loop passes the
// journal rows it collected and its clock; tests pass their own.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "goals/model.hpp"
#include "goals/types.hpp"

namespace moonmq::goals {

/// One row of the reassignment journal (GET /cluster/moves, the
/// reassigner's list; docs/cluster.md "Move states").
struct journal_move {
  topic_partition tp;
  std::string from;
  std::string to;
  /// queued, copying, cutover, draining, offsets, rolling_back (running);
  /// done, failed, cancelled (ended; a rolled-back move ends failed).
  std::string state;
  /// "operator" (POST /admin/reassignments), "balancer" or "" (older rows).
  std::string origin;
  /// Wall-clock ms of the row's last step: when it ended, once ended.
  std::int64_t updated_ms = 0;
};

/// Reads one journal row. nullopt when topic (a non-empty string) or
/// partition (an integer in [0, 2^31)) is missing or malformed; other
/// fields missing or of the wrong type read as empty / 0 (an empty state
/// counts as running, so such a partition stays still).
std::optional<journal_move> journal_move_from_json(const nlohmann::json& row);

/// How long a move's end holds its partition, in ms (docs/balancer.md
/// "Stability rules"; Autobalance keys in docs/configuration.md).
struct stability_windows {
  /// The partition does not move again after a move of the balance loop
  /// ended (done, failed or cancelled): 3 intervals, so that its rates on
  /// the new owner fill a window first.
  std::int64_t cooldown_ms = 0;
  /// The same after an operator's move: max(cooldown_ms,
  /// ManualMoveCooldownSeconds), so the loop does not undo a hand move.
  std::int64_t manual_cooldown_ms = 0;
  /// The partition does not go back to the broker a done move took it
  /// from, nor to the destination of a failed or cancelled move:
  /// AvoidBrokerSeconds, never less than the move's cooldown.
  std::int64_t avoid_ms = 0;

  /// Cooldown of a move with this origin.
  std::int64_t cooldown_for(const std::string& origin) const;
  /// Avoid window of a move with this origin (at least its cooldown).
  std::int64_t avoid_for(const std::string& origin) const;
};

/// Loop passes a finished move holds its partition still.
inline constexpr std::int64_t kCooldownIntervals = 3;

/// The windows of a loop running every `interval_seconds` with
/// ManualMoveCooldownSeconds `manual_seconds` and AvoidBrokerSeconds
/// `avoid_seconds` (each clamped to [0, 10^12] s).
stability_windows make_stability_windows(std::int64_t interval_seconds, std::int64_t manual_seconds,
                                         std::int64_t avoid_seconds);

/// Adds the journal to `model` (whose brokers are set) at wall-clock
/// `now_ms`, row by row:
///  - running (any state but done, failed, cancelled): in flight to `to`,
///    or back to `from` while rolling_back (the source takes the partition
///    back); in cooldown instead when that broker is not in the model;
///    left out when the partition is not in the model (snapshot::freeze
///    refuses an in-flight move of an unknown partition);
///  - done, ended less than cooldown_for(origin) ago: in cooldown; ended less
///    than avoid_for(origin) ago: `from` avoided (no move back);
///  - failed or cancelled (rolled back included), ended less than
///    cooldown_for(origin) ago: in cooldown; less than avoid_for(origin) ago:
///    `to` avoided (the destination that did not take it).
///  - ended (done, failed or cancelled) but superseded: the broker the move
///    left the partition on (`to` when done, else `from`) is not alive in
///    the model (or not in it) while the partition is modelled on another,
///    alive broker: the partition was failed over since (shared storage,
///    docs/balancer.md "Failover (shared storage)"); no cooldown, no avoid.
/// Avoided brokers not in the model are left out; cooldown and avoid come
/// out sorted without duplicates. A row is "ago" by now_ms − updated_ms, so
/// a row stamped ahead of `now_ms` (another broker's clock) counts as recent.
void add_move_history(cluster_model& model, const std::vector<journal_move>& rows, const stability_windows& w,
                      std::int64_t now_ms);

}  // namespace moonmq::goals
