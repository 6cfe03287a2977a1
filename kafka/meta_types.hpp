#pragma once
// Wire structs of the cluster-level APIs: ApiVersions (18) v0-3, Metadata (3)
// v0-4, CreateTopics (19) v0-4, DeleteTopics (20) v0-3, InitProducerId (22) v0-1. Field names follow
// Kafka's message schemas (clients/src/main/resources/common/message/*.json,
// Kafka 3.8) in snake_case; a comment gives the first version carrying a
// field (older versions neither read nor write it). Durations are ms.
//
// Each struct has decode(reader&, version, T&) and encode(writer&, version,
// const T&), valid for the advertised versions only (codec.hpp checks).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kafka/api.hpp"
#include "kafka/wire.hpp"

namespace moonmq::kafka {

// ---- ApiVersions (key 18): v3 is flexible (compact strings, tagged fields) ----

struct api_versions_request {
  static constexpr api_key key = api_key::api_versions;
  std::string client_software_name;     ///< v3+ (librdkafka: "librdkafka")
  std::string client_software_version;  ///< v3+
};

struct api_version_entry {
  int16_t api = 0;  ///< Kafka's ApiKey
  int16_t min_version = 0;
  int16_t max_version = 0;
};

struct api_versions_response {
  static constexpr api_key key = api_key::api_versions;
  int16_t error_code = 0;
  std::vector<api_version_entry> api_keys;
  int32_t throttle_time_ms = 0;  ///< v1+
};

/// The response advertising supported_apis() with `error` (error_code::none,
/// or unsupported_version for the KIP-511 fallback).
api_versions_response make_api_versions_response(int16_t error = 0);

// ---- Metadata (key 3) ----

struct metadata_request {
  static constexpr api_key key = api_key::metadata;
  /// nullopt = all topics. v0 has no null: an empty v0 array means all
  /// topics and decodes to nullopt (encodes back as an empty array).
  std::optional<std::vector<std::string>> topics;
  bool allow_auto_topic_creation = true;  ///< v4+ (v0-3 imply true)
};

struct metadata_broker {
  int32_t node_id = 0;
  std::string host;
  int32_t port = 0;
  std::optional<std::string> rack;  ///< v1+
};

struct metadata_partition {
  int16_t error_code = 0;
  int32_t partition_index = 0;
  int32_t leader_id = -1;
  std::vector<int32_t> replica_nodes;
  std::vector<int32_t> isr_nodes;
};

struct metadata_topic {
  int16_t error_code = 0;
  std::string name;
  bool is_internal = false;  ///< v1+
  std::vector<metadata_partition> partitions;
};

struct metadata_response {
  static constexpr api_key key = api_key::metadata;
  int32_t throttle_time_ms = 0;  ///< v3+
  std::vector<metadata_broker> brokers;
  std::optional<std::string> cluster_id;  ///< v2+
  int32_t controller_id = -1;             ///< v1+
  std::vector<metadata_topic> topics;
};

// ---- CreateTopics (key 19) ----

struct creatable_replica_assignment {
  int32_t partition_index = 0;
  std::vector<int32_t> broker_ids;
};

struct creatable_topic_config {
  std::string name;
  std::optional<std::string> value;
};

struct creatable_topic {
  std::string name;
  int32_t num_partitions = -1;      ///< -1: broker default (with assignments)
  int16_t replication_factor = -1;  ///< -1: broker default
  std::vector<creatable_replica_assignment> assignments;
  std::vector<creatable_topic_config> configs;
};

struct create_topics_request {
  static constexpr api_key key = api_key::create_topics;
  std::vector<creatable_topic> topics;
  int32_t timeout_ms = 0;
  bool validate_only = false;  ///< v1+
};

struct creatable_topic_result {
  std::string name;
  int16_t error_code = 0;
  std::optional<std::string> error_message;  ///< v1+
};

struct create_topics_response {
  static constexpr api_key key = api_key::create_topics;
  int32_t throttle_time_ms = 0;  ///< v2+
  std::vector<creatable_topic_result> topics;
};

// ---- DeleteTopics (key 20), v0-3 (DeleteTopicsRequest.json: v4 is the
// first flexible version, v6 names topics by id) ----

struct delete_topics_request {
  static constexpr api_key key = api_key::delete_topics;
  std::vector<std::string> topic_names;
  int32_t timeout_ms = 0;
};

struct deletable_topic_result {
  std::string name;
  int16_t error_code = 0;
};

struct delete_topics_response {
  static constexpr api_key key = api_key::delete_topics;
  int32_t throttle_time_ms = 0;  ///< v1+
  std::vector<deletable_topic_result> responses;
};

// ---- InitProducerId (key 22) ----

struct init_producer_id_request {
  static constexpr api_key key = api_key::init_producer_id;
  std::optional<std::string> transactional_id;  ///< null for idempotence only
  int32_t transaction_timeout_ms = 0;
};

struct init_producer_id_response {
  static constexpr api_key key = api_key::init_producer_id;
  int32_t throttle_time_ms = 0;
  int16_t error_code = 0;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
};

bool decode(reader& r, int16_t version, api_versions_request& out);
bool encode(writer& w, int16_t version, const api_versions_request& in);
bool decode(reader& r, int16_t version, api_versions_response& out);
bool encode(writer& w, int16_t version, const api_versions_response& in);
bool decode(reader& r, int16_t version, metadata_request& out);
bool encode(writer& w, int16_t version, const metadata_request& in);
bool decode(reader& r, int16_t version, metadata_response& out);
bool encode(writer& w, int16_t version, const metadata_response& in);
bool decode(reader& r, int16_t version, create_topics_request& out);
bool encode(writer& w, int16_t version, const create_topics_request& in);
bool decode(reader& r, int16_t version, create_topics_response& out);
bool encode(writer& w, int16_t version, const create_topics_response& in);
bool decode(reader& r, int16_t version, delete_topics_request& out);
bool encode(writer& w, int16_t version, const delete_topics_request& in);
bool decode(reader& r, int16_t version, delete_topics_response& out);
bool encode(writer& w, int16_t version, const delete_topics_response& in);
bool decode(reader& r, int16_t version, init_producer_id_request& out);
bool encode(writer& w, int16_t version, const init_producer_id_request& in);
bool decode(reader& r, int16_t version, init_producer_id_response& out);
bool encode(writer& w, int16_t version, const init_producer_id_response& in);

}  // namespace moonmq::kafka
