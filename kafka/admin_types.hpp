#pragma once
// Wire structs of the topic and cluster administration APIs: DescribeConfigs
// (32) v0-2, AlterConfigs (33) v0-1, CreatePartitions (37) v0-1,
// IncrementalAlterConfigs (44) v0-1 (KIP-339; v1 flexible) and
// DescribeCluster (60) v0 (KIP-700; flexible), DeleteRecords (21) v0-2
// (KIP-107; flexible from v2). Field names follow Kafka's
// message schemas (clients/src/main/resources/common/message/
// {DescribeConfigs,AlterConfigs,CreatePartitions,IncrementalAlterConfigs,
// DescribeCluster}{Request,Response}.json, Kafka 3.8) in snake_case; a
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

/// A resource and its config changes (AlterConfigs, IncrementalAlterConfigs).
template <class Config>
struct config_changes_resource {
  int8_t resource_type = 0;
  std::string resource_name;
  std::vector<Config> configs;
};

using alter_configs_resource = config_changes_resource<alterable_config>;

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

// ---- IncrementalAlterConfigs (key 44, KIP-339) ----

/// AlterConfigOp types.
namespace config_op {
inline constexpr int8_t set = 0;
inline constexpr int8_t remove = 1;  ///< DELETE: back to the default
inline constexpr int8_t append = 2;  ///< list configs only
inline constexpr int8_t subtract = 3;  ///< list configs only
}  // namespace config_op

struct incremental_alterable_config {
  std::string name;
  int8_t config_operation = config_op::set;
  std::optional<std::string> value;
};

using incremental_alter_configs_resource = config_changes_resource<incremental_alterable_config>;

struct incremental_alter_configs_request {
  static constexpr api_key key = api_key::incremental_alter_configs;
  std::vector<incremental_alter_configs_resource> resources;
  bool validate_only = false;
};

/// Same answer shape as AlterConfigs.
struct incremental_alter_configs_response {
  static constexpr api_key key = api_key::incremental_alter_configs;
  int32_t throttle_time_ms = 0;
  std::vector<alter_configs_resource_response> responses;
};

// ---- DescribeCluster (key 60, KIP-700) ----

struct describe_cluster_request {
  static constexpr api_key key = api_key::describe_cluster;
  bool include_cluster_authorized_operations = false;
};

struct describe_cluster_broker {
  int32_t broker_id = 0;
  std::string host;
  int32_t port = 0;
  std::optional<std::string> rack;
};

struct describe_cluster_response {
  static constexpr api_key key = api_key::describe_cluster;
  int32_t throttle_time_ms = 0;
  int16_t error_code = 0;
  std::optional<std::string> error_message;
  std::string cluster_id;
  int32_t controller_id = -1;  ///< -1 while no controller is known
  std::vector<describe_cluster_broker> brokers;
  /// Bit field of AclOperation codes; INT32_MIN when not asked for.
  int32_t cluster_authorized_operations = -2147483647 - 1;
};

// ---- DeleteRecords (key 21, KIP-107) ----

struct delete_records_partition {
  int32_t partition_index = 0;
  int64_t offset = 0;  ///< delete every record below it; -1: the high watermark
};

struct delete_records_topic {
  std::string name;
  std::vector<delete_records_partition> partitions;
};

struct delete_records_request {
  static constexpr api_key key = api_key::delete_records;
  std::vector<delete_records_topic> topics;
  int32_t timeout_ms = 0;
};

struct delete_records_partition_result {
  int32_t partition_index = 0;
  int64_t low_watermark = -1;  ///< the log start after the request; -1 with an error
  int16_t error_code = 0;
};

struct delete_records_topic_result {
  std::string name;
  std::vector<delete_records_partition_result> partitions;
};

struct delete_records_response {
  static constexpr api_key key = api_key::delete_records;
  int32_t throttle_time_ms = 0;
  std::vector<delete_records_topic_result> topics;
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
bool decode(reader& r, int16_t version, incremental_alter_configs_request& out);
bool encode(writer& w, int16_t version, const incremental_alter_configs_request& in);
bool decode(reader& r, int16_t version, incremental_alter_configs_response& out);
bool encode(writer& w, int16_t version, const incremental_alter_configs_response& in);
bool decode(reader& r, int16_t version, describe_cluster_request& out);
bool encode(writer& w, int16_t version, const describe_cluster_request& in);
bool decode(reader& r, int16_t version, describe_cluster_response& out);
bool encode(writer& w, int16_t version, const describe_cluster_response& in);
bool decode(reader& r, int16_t version, delete_records_request& out);
bool encode(writer& w, int16_t version, const delete_records_request& in);
bool decode(reader& r, int16_t version, delete_records_response& out);
bool encode(writer& w, int16_t version, const delete_records_response& in);

}  // namespace moonmq::kafka
