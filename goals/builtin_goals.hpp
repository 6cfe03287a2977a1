#pragma once
// The built-in goals, implemented once in the SDK so that each built-in
// plugin (plugins/builtin/) is a few lines.
//
// Distribution goals NW_IN, NW_OUT, DISK, PARTITION_COUNT (soft): keep every
// eligible broker inside band = mean·(1 ± AvgDeviation); shed load from
// brokers above the band and fill brokers below it (new empty brokers
// included); idle while the mean raw load is below DetectThreshold.
// Capacity goals DISK_CAPACITY, NW_IN_CAPACITY, NW_OUT_CAPACITY (hard):
// load ≤ capacity × CapacityThreshold on every broker that declares a capacity.
// Topic spread goal TOPIC_SPREAD (soft): every eligible broker holds between
// floor(m·(1 − AvgDeviation)) and ceil(m·(1 + AvgDeviation)) of each topic's
// partitions, m = the topic's partitions on eligible brokers / eligible
// brokers (Cruise Control's TopicReplicaDistributionGoal).
// Slow broker goal SLOW_BROKER (soft): moves every movable partition off
// brokers the balance loop marked slow (broker_spec::slow), heaviest write
// load first, each to the eligible broker the other goals score best; only
// hard goals may refuse those moves (as for a drain).
// Defaults are listed in docs/balancer.md.

#include <memory>
#include <vector>

#include "goals/goal.hpp"

namespace moonmq::goals {

/// Default config of the distribution goal for `r`: AvgDeviation 0.2;
/// DetectThreshold 1 MiB/s for NW_IN/NW_OUT (the MoonMQ cluster default),
/// 100 MiB for DISK, 0 for PARTITION_COUNT; Priority NW_IN 50, NW_OUT 40,
/// DISK 30, PARTITION_COUNT 20.
goal_config default_distribution_config(resource r);
/// Default config of a capacity goal: CapacityThreshold 0.8; Priority
/// DISK_CAPACITY 100, NW_IN_CAPACITY 95, NW_OUT_CAPACITY 90.
goal_config default_capacity_config(resource r);

/// Default config of TOPIC_SPREAD: AvgDeviation 0.2; DetectThreshold 0 (a
/// topic whose mean partitions per eligible broker is below it is not
/// checked); Priority 10, below every distribution goal.
goal_config default_topic_spread_config();

/// Default config of SLOW_BROKER: Priority 60, above every distribution goal
/// and below the capacity goals; on by default.
goal_config default_slow_broker_config();

/// Distribution goal for any resource; named resource_name(r).
std::unique_ptr<goal> make_distribution_goal(resource r);
/// Capacity goal for a measured resource (not PARTITION_COUNT); named
/// resource_name(r) + "_CAPACITY". Returns nullptr for PARTITION_COUNT.
std::unique_ptr<goal> make_capacity_goal(resource r);
/// The topic spread goal, named "TOPIC_SPREAD" (docs/balancer.md "Topic spread").
std::unique_ptr<goal> make_topic_spread_goal();
/// The slow broker goal, named "SLOW_BROKER" (docs/balancer.md "Slow brokers").
std::unique_ptr<goal> make_slow_broker_goal();
/// All nine built-in goals.
std::vector<std::unique_ptr<goal>> make_builtin_goals();

}  // namespace moonmq::goals
