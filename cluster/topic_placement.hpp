#pragma once
// Where a new topic's partitions (or a growth's) start (docs/metadata.md
// "Placing a new topic's partitions"): spread over racks by rack weight and,
// within a rack, over brokers by broker weight — AutoMQ's rack-aware,
// weighted placement. Pure: the caller picks the eligible brokers (alive,
// neither draining nor removed) and proposes the result in the topic entry.

#include <cstdint>
#include <string>
#include <vector>

namespace moonmq::cluster {

/// What a broker that reads placed topic entries (raft::topic_entry
/// `owners`) announces in its GET /cluster/loads answer ("topic_placement");
/// brokers of earlier versions announce nothing (read as 0).
constexpr int32_t topic_placement_version = 1;

/// A broker new partitions may be placed on.
struct placement_candidate {
  std::string id;
  std::string rack;        ///< Cluster.Rack; "" = none (every such broker counts as one rack)
  double weight = 1;       ///< Cluster.Weight, > 0
  int64_t partitions = 0;  ///< partitions it owns now, of every topic
  int32_t of_topic = 0;    ///< partitions of this topic it owns now (a growth; 0 for a create)
};

/// The owners of `count` new partitions, in partition order (empty when
/// `brokers` is empty or `count` < 1). Each partition in turn goes to a
/// rack, then to a broker of that rack, by the Sainte-Laguë (Webster)
/// highest-averages rule over the topic's partitions: the rack with the
/// least (2·n + 1) / w, n its partitions of the topic so far and w its
/// weight (the sum of its brokers' weights), then likewise among the rack's
/// brokers with their own weights. The shares are as proportional to the
/// weights as whole partitions allow, with no bias towards heavy racks: 8
/// partitions over weights 1, 1 and 2 land 2, 2 and 4; a rack of weight 2
/// and one of weight 1 take 2/3 and 1/3 of a topic; a 2-partition topic
/// over those two racks puts one in each. Ties go to fewer partitions of every topic per
/// unit of weight (an emptier broker is filled first), then to the smaller
/// rack and broker id, so the result depends on the input only. The
/// partitions carry no traffic yet, so network and disk loads play no part;
/// the balance loop's goals take over from there. O(count · brokers).
std::vector<std::string> place_partitions(std::vector<placement_candidate> brokers, int32_t count);

}  // namespace moonmq::cluster
