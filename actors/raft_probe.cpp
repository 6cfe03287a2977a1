#include "actors/raft_probe.hpp"

#include "util/metrics.hpp"

namespace moonmq {

raft_probe::raft_probe()
    : term_(metrics::registry::global().get_gauge("moonmq_raft_term", "Current Raft term of this broker")),
      controller_(metrics::registry::global().get_gauge(
        "moonmq_raft_is_controller", "1 while this broker is the Raft leader (the controller)")),
      commit_(metrics::registry::global().get_gauge("moonmq_raft_commit_index",
                                                    "Highest Raft log index known committed")),
      elections_(metrics::registry::global().get_counter("moonmq_raft_elections_total",
                                                         "Elections this broker started")),
      offline_(metrics::registry::global().get_gauge(
        "moonmq_cluster_offline_partitions",
        "Partitions whose owner the metadata log has fenced (no broker serves them)")),
      lease_(metrics::registry::global().get_gauge(
        "moonmq_broker_lease_valid", "1 while this broker's lease is valid (docs/shared-storage.md \"The lease\")")) {}

void raft_probe::election_started() { elections_.inc(); }

void raft_probe::status(uint64_t term, bool is_controller, uint64_t commit_index, bool lease_valid) {
  term_.set(static_cast<double>(term));
  controller_.set(is_controller ? 1.0 : 0.0);
  commit_.set(static_cast<double>(commit_index));
  lease_.set(lease_valid ? 1.0 : 0.0);
}

void raft_probe::offline_partitions(size_t n) { offline_.set(static_cast<double>(n)); }

}  // namespace moonmq
