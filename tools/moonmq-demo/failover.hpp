#pragma once
// moonmq-demo: the broker kill of --kill-broker-at and what the live view
// shows of the failover that follows (shared storage, docs/shared-storage.md
// and docs/balancer.md "Failover (shared storage)"): the broker fenced, each
// of its partitions handed to another owner, and each taking writes again.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tools/moonmq-demo/monitor.hpp"

namespace moonmq::demo {

/// Runs on the main thread, once per summary tick.
class failover_watch {
public:
  explicit failover_watch(run& r) : r_(r) {}

  /// Whether the run asks for a kill at all (--kill-broker-at > 0).
  bool wanted() const { return r_.opt.kill_broker_at > 0; }
  /// The killed broker's id ("" before the kill).
  const std::string& victim() const { return victim_; }
  /// Nothing asked, or every partition of the killed broker took writes again.
  bool done() const;

  /// Kills the chosen broker once `elapsed_s` reached its time, then follows
  /// the failover in `snap` (owners, fences) and `bal` (the controller's
  /// FAILOVER rows) and the producers' acknowledgements. Returns event lines.
  std::vector<std::string> tick(double elapsed_s, const cluster_snapshot& snap, const balancer_view& bal);
  /// Lines for the live summary (none before the kill time).
  std::vector<std::string> summary_lines() const;
  /// Lines for the end of the run.
  std::vector<std::string> report_lines() const;

private:
  struct part_state {
    std::string to;           ///< new owner ("" while the killed broker still owns it)
    int64_t owner_epoch = 0;  ///< at the handover, as the snapshot showed it
    double moved_s = -1;      ///< seconds after the kill the snapshot showed the new owner
    double writes_s = -1;     ///< seconds after the kill of the first acknowledgement of a produce sent after it
  };

  std::optional<std::string> kill(double elapsed_s, const cluster_snapshot& snap);
  double since_kill(int64_t ns) const { return static_cast<double>(ns - kill_ns_) / 1e9; }

  run& r_;
  std::string victim_;
  int victim_pid_ = 0;
  std::string leader_;
  double killed_at_s_ = -1;  ///< seconds into the run
  int64_t kill_ns_ = 0;
  bool waiting_noted_ = false;
  bool gave_up_ = false;
  double fenced_s_ = -1;     ///< seconds after the kill the snapshot first showed it fenced
  double all_writes_s_ = -1;
  std::map<tp_key, part_state> parts_;
  std::map<tp_key, std::string> reasons_;  ///< the controller's reason per handed-over partition
};

}  // namespace moonmq::demo
