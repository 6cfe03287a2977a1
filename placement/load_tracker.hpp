#pragma once
// The latest session-load report of every broker as seen by one broker, with
// what the receiver knows and a report cannot say about itself: when a new
// report last arrived (on the receiver's clock, so staleness never compares
// two machines' clocks), whether the peer is reachable, and whether the
// sender's counters went backwards (a restart: its rates are not trusted for
// that report). Pure: time comes in as milliseconds.

#include <cstdint>
#include <map>
#include <vector>

#include "placement/load_report.hpp"

namespace moonmq::placement {

/// One broker's latest report plus the receiver's view of it: the scorer's
/// input (placement/scorer.hpp).
struct broker_load {
  load_report report;
  int64_t seen_ms = 0;          ///< receiver's clock when this report (a new sample) arrived
  bool alive = true;            ///< false: the peer did not answer its last call (dead/unreachable)
  bool counters_reset = false;  ///< the report's counters went backwards vs. the previous one (restart)
};

/// What observe() did with a report.
enum class observe_outcome {
  first,         ///< first report of this broker: kept
  updated,       ///< a newer sample of the same process: kept
  reset,         ///< the sender restarted (new started_ms) or its counters went backwards: kept, rates untrusted
  duplicate,     ///< same sample time as the held report: ignored (does not refresh seen_ms)
  out_of_order,  ///< older than the held report of the same process: ignored
  invalid,       ///< fails validate(): ignored
};

/// Stable lower-case name ("reset", ...), for logs.
const char* to_string(observe_outcome o);

/// True when `next`, a later report of the same broker, shows a restart
/// relative to `prev`: a different non-zero started_ms, or a cumulative byte
/// counter lower than before.
bool counters_went_backwards(const load_report& prev, const load_report& next);

/// Latest report per broker. Not thread-safe; one owner (the load_meter actor).
class load_tracker {
 public:
  /// Takes `r` received at `now_ms` (receiver's clock). Rules, in order:
  /// invalid → ignored; first report → kept; restart (counters_went_backwards
  /// with a new started_ms) → kept as reset whatever its time; older sample
  /// time of the same process → out_of_order; same sample time → duplicate;
  /// counters lower with a newer time → reset; else updated. A kept report
  /// marks the broker alive; `counters_reset` lasts until the next kept report
  /// whose counters did not go backwards.
  observe_outcome observe(load_report r, int64_t now_ms);

  /// Records whether the peer answered its last call (the report pull or any
  /// other): a dead broker is never recommended even with a fresh report.
  void set_alive(const broker_id& id, bool alive);

  /// Drops a broker (left the configuration).
  void forget(const broker_id& id);

  /// Every broker's latest view, in broker id order.
  std::vector<broker_load> snapshot() const;

  /// The held view of `id`, or nullptr.
  const broker_load* find(const broker_id& id) const;

 private:
  std::map<broker_id, broker_load> brokers_;
};

}  // namespace moonmq::placement
