#pragma once
// Kafka topic and cluster administration for the Kafka listener
// (docs/kafka.md): CreatePartitions (37), DescribeConfigs (32),
// AlterConfigs (33), IncrementalAlterConfigs (44) and DescribeCluster (60). With the
// metadata log every change goes through the cluster state actor (a `grow`
// or `alter` topic entry, docs/metadata.md), so it reaches every broker;
// without one, through this broker's broker actor. The config rules are
// dataplane/topic_config.hpp's; this file maps them to Kafka's codes.

#include <memory>

#include "kafka/codec.hpp"
#include "transport/kafka_handlers.hpp"

namespace moonmq::transport {

/// Handles CreatePartitions, DescribeConfigs, AlterConfigs,
/// IncrementalAlterConfigs and DescribeCluster (`done`
/// exactly once, from any thread). Returns false, calling nothing, for any
/// other request.
bool handle_kafka_admin_request(const std::shared_ptr<kafka_context>& ctx, kafka::request& req, kafka_done& done);

}  // namespace moonmq::transport
