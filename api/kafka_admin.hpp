#pragma once
// Kafka topic and cluster administration for the Kafka listener
// (docs/kafka.md): CreateTopics (19) and DeleteTopics (20) in
// kafka_topics.cpp; CreatePartitions (37), DescribeConfigs (32),
// AlterConfigs (33), IncrementalAlterConfigs (44) and DescribeCluster (60). With the
// metadata log every change goes through the cluster state actor (a `grow`
// or `alter` topic entry, docs/metadata.md), so it reaches every broker;
// without one, through this broker's broker actor. The config rules are
// dataplane/topic_config.hpp's; this file maps them to Kafka's codes.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <caf/fwd.hpp>

#include "kafka/codec.hpp"
#include "api/kafka_handlers.hpp"

namespace moonmq::transport {

/// Handles CreatePartitions, DescribeConfigs, AlterConfigs,
/// IncrementalAlterConfigs and DescribeCluster (`done`
/// exactly once, from any thread). Returns false, calling nothing, for any
/// other request.
bool handle_kafka_admin_request(const std::shared_ptr<kafka_context>& ctx, kafka::request& req, kafka_done& done);

/// Handles CreateTopics and DeleteTopics (api/kafka_topics.cpp;
/// `done` exactly once, from any thread). Returns false, calling nothing,
/// for any other request.
bool handle_kafka_topic_request(const std::shared_ptr<kafka_context>& ctx, kafka::request& req, kafka_done& done);

/// Creates a topic with `config` (JSON text, "" = defaults): committed to
/// the metadata log (and so created on every broker) with Raft, else on
/// this broker alone. `owners`: the owner of each partition, as a
/// CreateTopics assignment names them (with the metadata log only). `ok`
/// gets whether it was created (false: it existed with that count).
void kafka_create_topic(const kafka_context& ctx, const std::string& name, int32_t partitions, std::string config,
                        std::function<void(bool&)> ok, std::function<void(const caf::error&)> fail,
                        std::vector<std::string> owners = {});

}  // namespace moonmq::transport
