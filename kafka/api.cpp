#include "kafka/api.hpp"

namespace moonmq::kafka {

const std::array<version_range, supported_api_count>& supported_apis() {
  // min/max from KAFKA.md "Versions to advertise" (the transaction APIs
  // 24-28: their non-flexible versions, KIP-98); flexible_from from the
  // Kafka 3.8 message schemas.
  static const std::array<version_range, supported_api_count> table{{
      {api_key::produce, 3, 7, 9},
      {api_key::fetch, 4, 11, 12},
      {api_key::list_offsets, 1, 2, 6},
      {api_key::metadata, 0, 4, 9},
      {api_key::offset_commit, 2, 7, 8},
      {api_key::offset_fetch, 1, 4, 6},
      {api_key::find_coordinator, 0, 2, 3},
      {api_key::join_group, 0, 5, 6},
      {api_key::heartbeat, 0, 3, 4},
      {api_key::leave_group, 0, 3, 4},
      {api_key::sync_group, 0, 3, 4},
      {api_key::describe_groups, 0, 4, 5},
      {api_key::list_groups, 0, 2, 3},
      {api_key::api_versions, 0, 3, 3},
      {api_key::create_topics, 0, 4, 5},
      {api_key::delete_topics, 0, 3, 4},
      {api_key::delete_records, 0, 2, 2},
      {api_key::init_producer_id, 0, 1, 2},
      {api_key::add_partitions_to_txn, 0, 1, 3},
      {api_key::add_offsets_to_txn, 0, 1, 3},
      {api_key::end_txn, 0, 1, 3},
      {api_key::txn_offset_commit, 0, 2, 3},
      {api_key::describe_configs, 0, 2, 4},
      {api_key::alter_configs, 0, 1, 2},
      {api_key::create_partitions, 0, 1, 2},
      {api_key::delete_groups, 0, 1, 2},
      {api_key::incremental_alter_configs, 0, 1, 1},
      {api_key::offset_delete, 0, 0, 32767},
      {api_key::describe_cluster, 0, 0, 0},
  }};
  return table;
}

std::optional<version_range> supported_range(int16_t key) {
  for (const auto& r : supported_apis())
    if (static_cast<int16_t>(r.key) == key)
      return r;
  return std::nullopt;
}

bool is_supported(int16_t key, int16_t version) {
  auto r = supported_range(key);
  return r && version >= r->min_version && version <= r->max_version;
}

bool is_transaction_api(int16_t key) {
  switch (static_cast<api_key>(key)) {
    case api_key::add_partitions_to_txn:
    case api_key::add_offsets_to_txn:
    case api_key::end_txn:
    case api_key::txn_offset_commit: return true;
    default: return false;
  }
}

bool is_flexible(api_key key, int16_t version) {
  auto r = supported_range(static_cast<int16_t>(key));
  return r && version >= r->flexible_from;
}

int request_header_version(api_key key, int16_t version) {
  return is_flexible(key, version) ? 2 : 1;
}

int response_header_version(api_key key, int16_t version) {
  if (key == api_key::api_versions)
    return 0;
  return is_flexible(key, version) ? 1 : 0;
}

const char* api_name(int16_t key) {
  switch (static_cast<api_key>(key)) {
    case api_key::produce: return "Produce";
    case api_key::fetch: return "Fetch";
    case api_key::list_offsets: return "ListOffsets";
    case api_key::metadata: return "Metadata";
    case api_key::offset_commit: return "OffsetCommit";
    case api_key::offset_fetch: return "OffsetFetch";
    case api_key::find_coordinator: return "FindCoordinator";
    case api_key::join_group: return "JoinGroup";
    case api_key::heartbeat: return "Heartbeat";
    case api_key::leave_group: return "LeaveGroup";
    case api_key::sync_group: return "SyncGroup";
    case api_key::describe_groups: return "DescribeGroups";
    case api_key::list_groups: return "ListGroups";
    case api_key::delete_groups: return "DeleteGroups";
    case api_key::offset_delete: return "OffsetDelete";
    case api_key::incremental_alter_configs: return "IncrementalAlterConfigs";
    case api_key::describe_cluster: return "DescribeCluster";
    case api_key::delete_records: return "DeleteRecords";
    case api_key::api_versions: return "ApiVersions";
    case api_key::create_topics: return "CreateTopics";
    case api_key::delete_topics: return "DeleteTopics";
    case api_key::init_producer_id: return "InitProducerId";
    case api_key::add_partitions_to_txn: return "AddPartitionsToTxn";
    case api_key::add_offsets_to_txn: return "AddOffsetsToTxn";
    case api_key::end_txn: return "EndTxn";
    case api_key::txn_offset_commit: return "TxnOffsetCommit";
    case api_key::describe_configs: return "DescribeConfigs";
    case api_key::alter_configs: return "AlterConfigs";
    case api_key::create_partitions: return "CreatePartitions";
  }
  return "Unknown";
}

}  // namespace moonmq::kafka
