#pragma once
// Plan generation for `moonmqctl reassign generate`: spread the partitions of
// some topics evenly over a set of brokers with as few moves as possible,
// written in the version-1 reassignment format (CONTRACT §4) that
// `reassign execute` posts. Pure: data in, data out.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cluster/types.hpp"

namespace moonmq::cluster {

/// A partition and its current owner (as GET /admin/cluster reports).
struct partition_owner {
  topic_partition tp;
  broker_id owner;
};

/// One move of a plan.
struct planned_move {
  topic_partition tp;
  broker_id from;
  broker_id to;

  friend bool operator==(const planned_move& a, const planned_move& b) {
    return a.tp == b.tp && a.from == b.from && a.to == b.to;
  }
};

/// Spreads each topic's partitions in `current` over `targets`, topic by
/// topic. For a topic with N partitions and B targets every target's quota is
/// floor(N/B) or ceil(N/B); the N mod B larger quotas go to the targets that
/// already hold the most of the topic (ties: fewer partitions planned so far
/// over all topics, then the order of `targets`), which keeps the most
/// partitions in place. A target keeps its lowest-numbered partitions up to
/// its quota; the others — and every partition owned by a broker not in
/// `targets` — are handed out round-robin (in the order of `targets`, one
/// cursor over all topics) to targets still under quota. The number of moves
/// is therefore sum over targets of max(0, held - quota) plus the partitions
/// held outside `targets`: the least any balanced placement needs.
/// Returns only partitions that change owner, sorted by (topic, partition).
/// Errors: invalid_argument — `targets` empty, repeated, or not a valid
/// broker id; a partition repeated, with a bad topic/partition/owner, or of
/// an internal ("__") topic.
result<std::vector<planned_move>> generate_plan(const std::vector<partition_owner>& current,
                                                const std::vector<broker_id>& targets);

/// {"version":1,"partitions":[{"topic","partition","replicas":["<to>"]}]}
nlohmann::json plan_to_json(const std::vector<planned_move>& plan);

}  // namespace moonmq::cluster
