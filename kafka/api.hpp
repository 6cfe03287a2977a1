#pragma once
// The Kafka APIs moonmq speaks, the version ranges it advertises and the
// header versions they use. Source: ../shared/docs/KAFKA.md (version table,
// checked against librdkafka 2.0.2 and kafkajs 2.2.4) and the Kafka message
// schemas (`flexibleVersions`, KIP-482; ApiVersions response header, KIP-511).

#include <array>
#include <cstdint>
#include <optional>

namespace moonmq::kafka {

/// Kafka API keys of the supported subset (int16 on the wire).
enum class api_key : int16_t {
  produce = 0,
  fetch = 1,
  list_offsets = 2,
  metadata = 3,
  offset_commit = 8,
  offset_fetch = 9,
  find_coordinator = 10,
  join_group = 11,
  heartbeat = 12,
  leave_group = 13,
  sync_group = 14,
  describe_groups = 15,
  list_groups = 16,
  api_versions = 18,
  create_topics = 19,
  delete_topics = 20,
  delete_records = 21,
  init_producer_id = 22,
  add_partitions_to_txn = 24,
  add_offsets_to_txn = 25,
  end_txn = 26,
  txn_offset_commit = 28,
  describe_configs = 32,
  alter_configs = 33,
  create_partitions = 37,
  delete_groups = 42,
  incremental_alter_configs = 44,
  offset_delete = 47,
  describe_cluster = 60,
};

/// One advertised API: versions [min_version, max_version] inclusive, and
/// the first version Kafka encodes flexibly (compact types, tagged fields).
struct version_range {
  api_key key;
  int16_t min_version;
  int16_t max_version;
  int16_t flexible_from;
};

/// Number of supported APIs.
inline constexpr size_t supported_api_count = 29;

/// The ApiVersions table moonmq advertises, ordered by key (KAFKA.md).
const std::array<version_range, supported_api_count>& supported_apis();

/// The advertised range of `key`, or nullopt for an unsupported key.
std::optional<version_range> supported_range(int16_t key);

/// True when `key` is supported and `version` lies in its advertised range.
bool is_supported(int16_t key, int16_t version);

/// True for the APIs only a transaction coordinator answers (KIP-98):
/// AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit. A broker
/// without one leaves them out of ApiVersions.
bool is_transaction_api(int16_t key);

/// True when (key, version) uses the flexible encoding; among the advertised
/// versions: ApiVersions v3, IncrementalAlterConfigs v1, DescribeCluster v0.
bool is_flexible(api_key key, int16_t version);

/// Request header version: 2 (tagged fields after client_id) for flexible
/// versions, else 1. For an unsupported version of a known key, the answer
/// follows Kafka's flexible_from so the header can still be skipped.
int request_header_version(api_key key, int16_t version);

/// Response header version: 1 (tag byte) for flexible versions, except
/// ApiVersions whose response header is always 0 (KIP-511).
int response_header_version(api_key key, int16_t version);

/// Kafka's name of the API ("Produce", "ApiVersions"), or "Unknown".
const char* api_name(int16_t key);

}  // namespace moonmq::kafka
