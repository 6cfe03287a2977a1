#pragma once
// Kafka's RangeAssignor (org.apache.kafka.clients.consumer.RangeAssignor) as a
// pure function: subscriptions and partition counts in, one assignment per
// member out. No I/O, no clocks, deterministic.

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "groups/types.hpp"

namespace moonmq::groups {

/// member id → the topics it subscribes to.
using subscriptions = std::map<std::string, std::set<std::string>>;

/// topic → number of partitions (partitions are numbered 0..count-1).
using partition_counts = std::map<std::string, int32_t>;

/// member id → its assignment.
using group_assignment = std::map<std::string, assignment>;

/// Per topic, independently: the members subscribed to it are sorted by
/// member id (byte-wise); with n partitions and m such members, member i gets
/// the contiguous range starting at i·(n/m) + min(i, n%m) of length n/m, plus
/// one when i < n%m — so the first n%m members get one extra partition
/// (3 members × 7 partitions → [0,1,2], [3,4], [5,6]). With more members than
/// partitions the last members get an empty list.
///
/// Every member of `subs` appears in the result; each of its topics appears
/// in its assignment (an empty list when it got nothing). A topic missing
/// from `counts`, or with a count <= 0, is assigned nothing.
group_assignment assign_range(const subscriptions& subs, const partition_counts& counts);

}  // namespace moonmq::groups
