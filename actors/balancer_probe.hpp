#pragma once
// The balance loop's metrics (docs/balancer.md "Metrics"), each series
// named once: the balancer reports what happened, the probe keeps the
// series (Redpanda's probe classes are the model). No CAF; thread-safe
// as the registry is.

#include <map>
#include <set>
#include <string>

namespace moonmq::metrics {
class counter;
}
namespace moonmq::goals {
struct plan;
}

namespace moonmq {

class balancer_probe {
 public:
  /// moonmq_autobalancer_passes_total.
  void pass_run();
  /// moonmq_autobalancer_actions_total{type}: a move the loop sent to a
  /// reassigner and it queued (`swap_half`: one half of a SWAP).
  void action_queued(bool swap_half);
  /// moonmq_autobalancer_failover_partitions_total at 0, so that the series
  /// exists before the first failover (a loop that watches for fenced
  /// brokers: shared storage).
  void failover_watch();
  /// moonmq_autobalancer_failover_partitions_total: a failover owner entry applied.
  void failover_applied();
  /// The last pass's figures: moonmq_autobalancer_broker_load{broker,resource}
  /// for the brokers in `listed` (alive at this pass and not removed; the
  /// others' series go), moonmq_autobalancer_load_mean and _load_stddev per
  /// goal, moonmq_autobalancer_last_plan_size.
  void plan_made(const goals::plan& plan, const std::set<std::string>& listed);
  /// moonmq_autobalancer_broker_slow{broker}: 1 for the brokers in `slow`,
  /// 0 for the other brokers alive in `alive` (id → alive); the series of
  /// brokers not alive or not listed go.
  void slow_brokers(const std::map<std::string, bool>& alive, const std::set<std::string>& slow);

 private:
  static metrics::counter& failovers();
};

/// The reassigner's metrics (docs/balancer.md "Metrics"), as balancer_probe.
class reassigner_probe {
 public:
  /// moonmq_reassign_bytes_total{dest}: bytes a move sent to `dest` (copy and drain).
  void bytes_sent(const std::string& dest, double bytes);
  /// moonmq_reassign_partitions_total{dest} and moonmq_reassign_duration_seconds:
  /// a move to `dest` done as its source, `seconds` after its acceptance.
  void move_done(const std::string& dest, double seconds);
};

}  // namespace moonmq
