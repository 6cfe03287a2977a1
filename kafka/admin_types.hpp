#pragma once
// Wire structs of the topic administration APIs: DescribeConfigs (32) v0-2,
// AlterConfigs (33) v0-1 and CreatePartitions (37) v0-1, the versions
// librdkafka 2.0.2 and kafkajs 2.2.4 send (the first flexible versions are 4,
// 2 and 2). Field names follow Kafka's message schemas
// (clients/src/main/resources/common/message/{DescribeConfigs,AlterConfigs,
// CreatePartitions}{Request,Response}.json, Kafka 3.8) in snake_case; a
// comment gives the first version carrying a field.
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

/// ConfigResource types (KIP-133): a topic, or a broker ("" = the
/// cluster-wide default of every broker).
namespace config_resource {
inline constexpr int8_t topic = 2;
inline constexpr int8_t broker = 4;
}  // namespace config_resource

/// DescribeConfigs config sources (v1+, KIP-226).
namespace config_source {
inline constexpr int8_t dynamic_topic = 1;
inline constexpr int8_t dynamic_default_broker = 3;
inline constexpr int8_t static_broker = 4;
inline constexpr int8_t default_config = 5;
}  // namespace config_source

// ---- DescribeConfigs (key 32) ----

struct describe_configs_resource {
  int8_t resource_type = 0;
  std::string resource_name;
  /// null = every config; kafkajs sends an empty array for every config too.
  std::optional<std::vector<std::string>> configuration_keys;
};

struct describe_configs_request {
  static constexpr api_key key = api_key::describe_configs;
  std::vector<describe_configs_resource> resources;
  bool include_synonyms = false;  ///< v1+
};

struct describe_configs_synonym {
  std::string name;
  std::optional<std::string> value;
  int8_t source = 0;
};

struct describe_configs_entry {
  std::string name;
  std::optional<std::string> value;
  bool read_only = false;
  bool is_default = false;  ///< v0 only
  int8_t config_source = -1;  ///< v1+
  bool is_sensitive = false;
  std::vector<describe_configs_synonym> synonyms;  ///< v1+
};

struct describe_configs_result {
  int16_t error_code = 0;
  std::optional<std::string> error_message;
  int8_t resource_type = 0;
  std::string resource_name;
  std::vector<describe_configs_entry> configs;
};

struct describe_configs_response {
  static constexpr api_key key = api_key::describe_configs;
  int32_t throttle_time_ms = 0;
  std::vector<describe_configs_result> results;
};

// ---- AlterConfigs (key 33) ----

struct alterable_config {
  std::string name;
  std::optional<std::string> value;
};

struct alter_configs_resource {
  int8_t resource_type = 0;
  std::string resource_name;
  std::vector<alterable_config> configs;
};

struct alter_configs_request {
  static constexpr api_key key = api_key::alter_configs;
  std::vector<alter_configs_resource> resources;
  bool validate_only = false;
};

struct alter_configs_resource_response {
  int16_t error_code = 0;
  std::optional<std::string> error_message;
  int8_t resource_type = 0;
  std::string resource_name;
};

struct alter_configs_response {
  static constexpr api_key key = api_key::alter_configs;
  int32_t throttle_time_ms = 0;
  std::vector<alter_configs_resource_response> responses;
};

// ---- CreatePartitions (key 37) ----

struct create_partitions_topic {
  std::string name;
  int32_t count = 0;
  /// One broker id list per new partition, or null (kafkajs sends an empty
  /// array when it has none).
  std::optional<std::vector<std::vector<int32_t>>> assignments;
};

struct create_partitions_request {
  static constexpr api_key key = api_key::create_partitions;
  std::vector<create_partitions_topic> topics;
  int32_t timeout_ms = 0;
  bool validate_only = false;
};

struct create_partitions_topic_result {
  std::string name;
  int16_t error_code = 0;
  std::optional<std::string> error_message;
};

struct create_partitions_response {
  static constexpr api_key key = api_key::create_partitions;
  int32_t throttle_time_ms = 0;
  std::vector<create_partitions_topic_result> results;
};

bool decode(reader& r, int16_t version, describe_configs_request& out);
bool encode(writer& w, int16_t version, const describe_configs_request& in);
bool decode(reader& r, int16_t version, describe_configs_response& out);
bool encode(writer& w, int16_t version, const describe_configs_response& in);
bool decode(reader& r, int16_t version, alter_configs_request& out);
bool encode(writer& w, int16_t version, const alter_configs_request& in);
bool decode(reader& r, int16_t version, alter_configs_response& out);
bool encode(writer& w, int16_t version, const alter_configs_response& in);
bool decode(reader& r, int16_t version, create_partitions_request& out);
bool encode(writer& w, int16_t version, const create_partitions_request& in);
bool decode(reader& r, int16_t version, create_partitions_response& out);
bool encode(writer& w, int16_t version, const create_partitions_response& in);

}  // namespace moonmq::kafka
