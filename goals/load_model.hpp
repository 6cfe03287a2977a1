#pragma once
// The live load model the balance loop feeds (DESIGN §4): per-partition
// windows of NW_IN / NW_OUT rates (from cumulative byte counters) and DISK
// sizes; to_model() turns it into a cluster_model for one planning pass.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "goals/load_window.hpp"
#include "goals/model.hpp"

namespace moonmq::goals {

/// One load report line for one partition.
struct replica_observation {
  topic_partition tp;
  std::string owner;             // broker id that owns it now
  std::uint64_t bytes_in = 0;    // cumulative bytes produced (counter)
  std::uint64_t bytes_out = 0;   // cumulative bytes fetched (counter)
  double disk_bytes = 0.0;       // current size on disk
  std::int64_t at_ms = 0;        // sample time, ms
};

class load_model {
 public:
  /// `config`: Autobalance.Window, MinValid, Percentile.
  explicit load_model(window_config config = {});

  /// Replaces the broker list (ids, racks, alive, excluded, capacities).
  void set_brokers(std::vector<broker_spec> brokers);
  /// Records one observation: owner updated; a NW_IN / NW_OUT sample once a
  /// previous counter value exists (counter resets re-prime, see
  /// counter_rate); a DISK sample every time.
  void observe(const replica_observation& o);
  /// Drops a partition (deleted topic).
  void forget(const topic_partition& tp);
  /// Partitions known.
  std::size_t size() const { return replicas_.size(); }

  /// The model for a planning pass: every partition with its owner and the
  /// percentile of each window; `trusted` only when all three windows hold
  /// MinValid samples (so a partition counts from its second report).
  cluster_model to_model() const;

 private:
  struct tracked {
    std::string owner;
    counter_rate in_rate;
    counter_rate out_rate;
    load_window nw_in;
    load_window nw_out;
    load_window disk;
  };
  window_config config_;
  std::vector<broker_spec> brokers_;
  std::map<topic_partition, tracked> replicas_;
};

}  // namespace moonmq::goals
