#pragma once
// Which brokers are slow (docs/balancer.md "Slow brokers"): the balance
// loop's rule, pure and driven pass by pass. AutoMQ's AutoBalancer handles
// a slow broker as a single-node failure: it is found by comparing it with
// its peers, relieved of its partitions and given none until it recovers.
//
// Each pass, every broker that answered gives its latency: its sync p90
// over the last window (storage/disk_latency.hpp), counted only with at
// least `min_samples` samples. The sync, not the produce latency: an
// append's wait grows with the broker's load as much as with its disk, and
// load is the distribution goals' business, while a sync of a few KiB
// takes the same on a healthy disk whatever the load. The p90, not the
// p99: a window holds tens of samples, where the p99 is the single worst
// one, and a broker that stalled once is not slow. A broker is a suspect in a pass when its latency is at
// least `ratio` times the median of the other reporting brokers' and at
// least `min_latency_ms`. It turns slow after `passes` suspect passes in a
// row and back after `passes` passes in a row below half of that bar
// (hysteresis: a broker at the bar does not flap). A broker without a
// figure in a pass (no report, too few samples) keeps its state.
//
// At most a minority, floor((n − 1) / 2) of the n brokers of the cluster,
// is held slow at once, the slowest first: when most brokers are slow, the
// cluster is, and moving partitions around would not help. The cap only
// chooses which slow brokers are held; it never changes a broker's state.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace moonmq::goals {

struct slow_rules {
  double ratio = 5.0;             ///< Autobalance.SlowBrokerRatio
  double min_latency_ms = 100.0;  ///< Autobalance.SlowBrokerMinLatencyMs
  int passes = 3;                 ///< Autobalance.SlowBrokerPasses
  std::uint64_t min_samples = 10;
};

/// One broker's report of one pass (GET /cluster/loads "latency"."sync").
struct broker_latency {
  std::uint64_t sync_count = 0;
  double sync_p90_ms = 0.0;
};

/// What one pass concluded about one reporting broker (/admin/balancer).
struct slow_verdict {
  std::string broker;
  std::optional<double> latency_ms;  ///< nullopt: too few samples
  double bar_ms = 0.0;               ///< suspect at or above this (0: no peer to compare with)
  bool suspect = false;
  /// Suspect passes in a row; for a slow broker, passes in a row below half the bar.
  int streak = 0;
  bool slow = false;  ///< held slow after this pass (within the cap)
};

class slow_detector {
 public:
  explicit slow_detector(slow_rules rules = {}) : rules_(rules) {}
  void set_rules(const slow_rules& r) { rules_ = r; }
  /// Runs one pass over the brokers that reported (by id), in a cluster of
  /// `cluster_size` brokers (alive ones; it bounds how many are held slow).
  /// Returns a verdict per reporting broker, in id order.
  std::vector<slow_verdict> update(const std::map<std::string, broker_latency>& reports, std::size_t cluster_size);
  /// Held slow after the last update.
  bool slow(const std::string& broker) const { return held_.count(broker) != 0; }
  /// Forgets a broker (removed from the cluster).
  void forget(const std::string& broker);

  /// The latency a report stands for: its sync p90 with enough samples.
  static std::optional<double> latency_of(const broker_latency& l, std::uint64_t min_samples);

 private:
  struct broker_state {
    bool slow = false;
    int streak = 0;
    double last_ms = 0.0;  ///< the last figure it gave (ranks the slow ones)
  };
  void hold(std::size_t cluster_size);

  slow_rules rules_;
  std::map<std::string, broker_state> state_;
  std::set<std::string> held_;
};

}  // namespace moonmq::goals
