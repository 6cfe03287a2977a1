#pragma once
// moonmq-demo: what the main thread watches — GET /admin/cluster (owners,
// sizes), GET /admin/reassignments (moves), GET /admin/balancer (the last
// pass) — and the live summary and before/after table built from them.

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tools/moonmq-demo/demo.hpp"

namespace moonmq::demo {

using steady = std::chrono::steady_clock;

struct partition_view {
  std::string owner;
  int64_t size_bytes = 0;
  int64_t log_end = 0;
  int64_t owner_epoch = 0;  ///< docs/metadata.md "Owner epochs" (0: not given)
};

/// One GET /admin/cluster, restricted to the demo's topics.
struct cluster_snapshot {
  bool ok = false;
  std::string error;
  steady::time_point at;
  std::string asked;                         ///< broker whose admin answered
  std::vector<std::pair<std::string, bool>> brokers;  ///< id, alive
  std::set<std::string> fenced;              ///< brokers the metadata log fenced
  std::set<tp_key> offline;                  ///< partitions whose owner is fenced
  std::map<tp_key, partition_view> parts;
  std::string controller;  ///< controller id ("" before any claim)
  int64_t epoch = 0;
};

/// Asks the brokers' admin APIs in order until one answers; updates the
/// run's owner map from the answer.
cluster_snapshot take_snapshot(run& r);

/// Per broker: partitions owned, bytes, and produce load between two snapshots
/// (growth of the partitions it owns now; a shrink counts as none).
struct broker_load {
  int partitions = 0;
  int64_t bytes = 0;
  double bytes_per_s = 0;
  double records_per_s = 0;
  bool alive = false;
  bool fenced = false;
};
std::map<std::string, broker_load> broker_loads(const run& r, const cluster_snapshot& now,
                                                const cluster_snapshot* before);

struct move_row {
  tp_key tp;
  std::string from, to, state, error;
  int64_t copied = 0, total = 0, started_ms = 0, updated_ms = 0;
  bool terminal() const { return state == "done" || state == "failed" || state == "cancelled"; }
};

/// GET /admin/reassignments, the demo's topics, moves started since `since_ms`.
struct moves_view {
  bool ok = false;
  std::string error;
  std::vector<move_row> rows;
  int unfinished = 0, done = 0, failed = 0, cancelled = 0;
};
moves_view take_moves(const run& r, int64_t since_ms);

/// GET /admin/balancer of the broker whose loop is acting (status 200, not
/// superseded, newest pass). The fields are read leniently: names this
/// program does not know leave them empty.
struct balancer_view {
  int status = 0;          ///< 200 when some broker answered; else the last status (404: no balance loop)
  std::string broker;      ///< whose answer this is
  bool enabled = false;
  bool dry_run = false;
  bool superseded = false;
  std::string pass_id;     ///< changes with every pass ("" before the first)
  std::optional<size_t> planned;  ///< moves the last pass planned
  bool conclusive = false;        ///< every broker counted (alive, complete window), nothing in flight
  std::vector<std::string> violated;  ///< goals with brokers outside their band before the pass
  /// FAILOVER rows of the last pass that failed partitions over (failover.last.executed).
  struct failover_row {
    tp_key tp;
    std::string from, to, reason, result;
  };
  std::vector<failover_row> failovers;
  std::string line;        ///< one readable line about the last pass
};
/// `killed`: a broker the demo killed; its being down does not make a pass
/// inconclusive (the cluster balances over the others).
balancer_view take_balancer(const run& r, const std::string& killed = {});

/// Lines of the live summary (no trailing newlines).
std::vector<std::string> summary_lines(const run& r, double elapsed_s, const cluster_snapshot& snap,
                                       const std::map<std::string, broker_load>& loads, const moves_view& moves,
                                       const balancer_view& bal, const std::string& status);

/// The before/after table.
std::vector<std::string> before_after_lines(const run& r, const std::map<std::string, broker_load>& before,
                                            const std::map<std::string, broker_load>& after);

}  // namespace moonmq::demo
