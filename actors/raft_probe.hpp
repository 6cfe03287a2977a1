#pragma once
// The Raft node's metrics (docs/raft.md "Visible state"), each series named once:
// the raft node reports what happened, the probe keeps the series (as
// balancer_probe.hpp; Redpanda's probe classes are the model). No CAF;
// thread-safe as the registry is. The series are registered when the probe
// is made, so that each exists (at 0) before the first election.

#include <cstddef>
#include <cstdint>

namespace moonmq::metrics {
class counter;
class gauge;
}

namespace moonmq {

class raft_probe {
 public:
  raft_probe();
  /// moonmq_raft_elections_total: this broker started an election.
  void election_started();
  /// moonmq_raft_term, moonmq_raft_is_controller, moonmq_raft_commit_index
  /// and moonmq_broker_lease_valid, after every tick and message.
  void status(uint64_t term, bool is_controller, uint64_t commit_index, bool lease_valid);
  /// moonmq_cluster_offline_partitions: partitions whose owner the metadata
  /// log has fenced (no broker serves them).
  void offline_partitions(size_t n);

 private:
  metrics::gauge& term_;
  metrics::gauge& controller_;
  metrics::gauge& commit_;
  metrics::counter& elections_;
  metrics::gauge& offline_;
  metrics::gauge& lease_;
};

}  // namespace moonmq
