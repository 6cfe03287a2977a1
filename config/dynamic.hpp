#pragma once
// The cluster's dynamic balancer settings (docs/metadata.md "Dynamic
// settings"): what an operator changes at runtime with PATCH /admin/balancer,
// kept in the metadata log and applied by every broker on top of its
// configured Autobalance section and Cluster.MoveThrottleBytesPerSec.
//
// JSON object, every key optional, named as the configuration keys are:
//   {"Enabled":true,"DryRun":false,"IntervalSeconds":30,"MaxActionsPerDetect":50,
//    "ExcludedTopics":["audit"],"ExcludedBrokers":["b3"],"MoveThrottleBytesPerSec":0,
//    "NumPartitions":3,"TopicPlacement":"spread","LogRetentionMs":604800000,"LogRetentionBytes":-1,"LogSegmentBytes":1073741824,
//    "Goals":{"NW_IN":{"Enabled":false},"DISK":{"AvgDeviation":0.2}}}
// A null value in a patch removes the key (the configured value applies again).
// "Goals" is replaced whole by a patch that names it; each goal in it
// overrides, key by key, the configured Autobalance.Goals.<NAME>.

#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "config/node_config.hpp"

namespace moonmq::config {

/// The largest NumPartitions, here and in Cluster.NumPartitions: the
/// largest topic a create accepts (dataplane::max_partitions; checked equal
/// where both are in scope, api/kafka_handlers.cpp).
constexpr int max_num_partitions = 10000;

/// The ranges of a goal's settings, here and in Autobalance.Goals.
constexpr double goal_avg_deviation_max = 10.0;
constexpr int goal_priority_bound = 1000000;

/// Checks a patch: an object whose keys are the ones above with values of
/// their types (booleans; IntervalSeconds 1..86400; MaxActionsPerDetect
/// 0..100000; arrays of strings of at most 10,000 names; a throttle >= 0;
/// NumPartitions 1..max_num_partitions; TopicPlacement "proposer" or
/// "spread"; LogSegmentBytes, LogRetentionBytes,
/// LogRetentionMs with the ranges of the topic keys they default
/// (dataplane::topic_default_keys, dataplane::check_topic_default);
/// Goals: goal name -> {Enabled bool, AvgDeviation 0..10, DetectThreshold
/// >= 0, Priority integer within +-1e6, CapacityThreshold 0..1}) or null.
/// "" when valid, else why (naming the key).
std::string check_balancer_patch(const nlohmann::json& patch);

/// `base` with the dynamic settings `settings` (a valid merged object, as
/// the metadata log holds it) applied on top.
autobalance_config apply_balancer_settings(autobalance_config base, const nlohmann::json& settings);

/// The move throttle in bytes per second: `settings`' MoveThrottleBytesPerSec
/// when present, else `configured`.
int64_t throttle_with(int64_t configured, const nlohmann::json& settings);

/// The partition count of a topic created without one: `settings`'
/// NumPartitions (Kafka's num.partitions, a cluster default kept with the
/// dynamic settings) when present, else `configured` (Cluster.NumPartitions).
int32_t num_partitions_with(int32_t configured, const nlohmann::json& settings);

/// Where a new topic's partitions start: `settings`' TopicPlacement when
/// present, else `configured` (Cluster.TopicPlacement); docs/metadata.md
/// "Placing a new topic's partitions".
std::string topic_placement_with(const std::string& configured, const nlohmann::json& settings);

/// The effective settings as the JSON object above (every key present), for
/// GET /admin/balancer and the PATCH answer.
nlohmann::json effective_balancer_settings(const autobalance_config& c, int64_t throttle);

}  // namespace moonmq::config
