#include "samples.hpp"

#include <stdexcept>

#include "storage/record_batch.hpp"

namespace moonmq::kafka::test {

std::string unhex(std::string_view hex_text) {
  std::string out;
  int nibble = -1;
  for (char c : hex_text) {
    int v = -1;
    if (c >= '0' && c <= '9')
      v = c - '0';
    else if (c >= 'a' && c <= 'f')
      v = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F')
      v = c - 'A' + 10;
    else if (c == ' ' || c == '\n' || c == '|')
      continue;
    else
      throw std::invalid_argument("bad hex character");
    if (nibble < 0) {
      nibble = v;
    } else {
      out.push_back(static_cast<char>(nibble * 16 + v));
      nibble = -1;
    }
  }
  if (nibble >= 0)
    throw std::invalid_argument("odd number of hex digits");
  return out;
}

std::string hex(std::string_view bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (char c : bytes) {
    auto u = static_cast<unsigned char>(c);
    if (!out.empty())
      out.push_back(' ');
    out.push_back(digits[u >> 4]);
    out.push_back(digits[u & 15]);
  }
  return out;
}

std::string sample_batch(int64_t producer_id, int32_t base_sequence) {
  std::vector<storage::record> records(3);
  records[0].key = "k0";
  records[0].value = "v0";
  records[0].timestamp_ms = 1700000000000;
  records[1].value = "v1";
  records[1].timestamp_ms = 1700000000001;
  records[1].headers.push_back({"h", std::string("x")});
  records[2].key = "";
  records[2].value = std::string(100, 'z');
  records[2].timestamp_ms = 1700000000002;
  storage::batch_options opts;
  opts.producer_id = producer_id;
  opts.producer_epoch = producer_id >= 0 ? 0 : -1;
  opts.base_sequence = base_sequence;
  return storage::encode_batch(records, opts).value();
}

std::vector<request_body> sample_requests() {
  std::vector<request_body> out;
  produce_request produce;
  produce.transactional_id = "tx";
  produce.acks = -1;
  produce.timeout_ms = 30000;
  produce.topics = {{"orders", {{0, sample_batch()}, {1, std::nullopt}}}, {"audit", {}}};
  out.emplace_back(produce);

  fetch_request fetch;
  fetch.replica_id = -1;
  fetch.max_wait_ms = 500;
  fetch.min_bytes = 1;
  fetch.max_bytes = 52428800;
  fetch.isolation_level = 1;
  fetch.session_id = 7;
  fetch.session_epoch = 3;
  fetch.topics = {{"orders", {{0, 5, 42, 0, 1048576}, {2, -1, 0, -1, 65536}}}};
  fetch.forgotten = {{"old", {1, 2}}};
  fetch.rack_id = "rack-a";
  out.emplace_back(fetch);

  list_offsets_request list;
  list.replica_id = -1;
  list.isolation_level = 1;
  list.topics = {{"orders", {{0, latest_timestamp}, {1, earliest_timestamp}, {2, 1700000000000}}}};
  out.emplace_back(list);

  metadata_request metadata;
  metadata.topics = std::vector<std::string>{"orders", "audit"};
  metadata.allow_auto_topic_creation = false;
  out.emplace_back(metadata);

  offset_commit_request commit;
  commit.group_id = "g";
  commit.generation_id = 4;
  commit.member_id = "m-1";
  commit.group_instance_id = "instance-1";
  commit.retention_time_ms = 86400000;
  commit.topics = {{"orders", {{0, 100, std::string("meta"), 3}, {1, 7, std::nullopt}}}};
  out.emplace_back(commit);

  offset_fetch_request fetch_offsets;
  fetch_offsets.group_id = "g";
  fetch_offsets.topics = std::vector<offset_fetch_topic>{{"orders", {0, 1, 2}}};
  out.emplace_back(fetch_offsets);

  find_coordinator_request find;
  find.key_value = "g";
  find.key_type = 1;
  out.emplace_back(find);

  join_group_request join;
  join.group_id = "g";
  join.session_timeout_ms = 45000;
  join.rebalance_timeout_ms = 300000;
  join.member_id = "m-1";
  join.group_instance_id = "instance-1";
  join.protocol_type = "consumer";
  join.protocols = {{"range", std::string("\x00\x01\x02", 3)}, {"roundrobin", ""}};
  out.emplace_back(join);

  heartbeat_request heartbeat;
  heartbeat.group_id = "g";
  heartbeat.generation_id = 4;
  heartbeat.member_id = "m-1";
  heartbeat.group_instance_id = "instance-1";
  out.emplace_back(heartbeat);

  leave_group_request leave;
  leave.group_id = "g";
  leave.member_id = "m-1";
  leave.members = {{"m-1", std::nullopt}, {"", std::string("instance-2")}};
  out.emplace_back(leave);

  sync_group_request sync;
  sync.group_id = "g";
  sync.generation_id = 4;
  sync.member_id = "m-1";
  sync.group_instance_id = "instance-1";
  sync.assignments = {{"m-1", std::string("\x00\x00\x01", 3)}, {"m-2", ""}};
  out.emplace_back(sync);

  describe_groups_request describe;
  describe.groups = {"g", "h"};
  describe.include_authorized_operations = true;
  out.emplace_back(describe);

  out.emplace_back(list_groups_request{});

  api_versions_request versions;
  versions.client_software_name = "librdkafka";
  versions.client_software_version = "2.0.2";
  out.emplace_back(versions);

  create_topics_request create;
  create.topics = {{"orders", 3, 1, {}, {{"retention.ms", std::string("1000")}, {"x", std::nullopt}}},
                   {"manual", -1, -1, {{0, {1, 2}}, {1, {2, 3}}}, {}}};
  create.timeout_ms = 5000;
  create.validate_only = true;
  out.emplace_back(create);

  delete_topics_request del;
  del.topic_names = {"orders", "audit"};
  del.timeout_ms = 7000;
  out.emplace_back(del);

  init_producer_id_request init;
  init.transactional_id = std::nullopt;
  init.transaction_timeout_ms = 60000;
  out.emplace_back(init);

  add_partitions_to_txn_request add_partitions;
  add_partitions.transactional_id = "tx-1";
  add_partitions.producer_id = 1234567890123;
  add_partitions.producer_epoch = 3;
  add_partitions.topics = {{"orders", {0, 2}}, {"audit", {}}};
  out.emplace_back(add_partitions);

  add_offsets_to_txn_request add_offsets;
  add_offsets.transactional_id = "tx-1";
  add_offsets.producer_id = 1234567890123;
  add_offsets.producer_epoch = 3;
  add_offsets.group_id = "g";
  out.emplace_back(add_offsets);

  end_txn_request end;
  end.transactional_id = "tx-1";
  end.producer_id = 1234567890123;
  end.producer_epoch = 3;
  end.committed = true;
  out.emplace_back(end);

  txn_offset_commit_request txn_commit;
  txn_commit.transactional_id = "tx-1";
  txn_commit.group_id = "g";
  txn_commit.producer_id = 1234567890123;
  txn_commit.producer_epoch = 3;
  txn_commit.topics = {{"orders", {{0, 100, 5, std::string("meta")}, {1, 7, -1, std::nullopt}}}};
  out.emplace_back(txn_commit);

  describe_configs_request describe_configs;
  describe_configs.resources = {{config_resource::topic, "orders", std::nullopt},
                                {config_resource::broker, "", std::vector<std::string>{"num.partitions"}}};
  describe_configs.include_synonyms = true;
  out.emplace_back(describe_configs);

  alter_configs_request alter_configs;
  alter_configs.resources = {{config_resource::topic, "orders", {{"retention.ms", std::string("60000")},
                                                                   {"segment.bytes", std::nullopt}}}};
  alter_configs.validate_only = true;
  out.emplace_back(alter_configs);

  create_partitions_request create_partitions;
  create_partitions.topics = {{"orders", 6, std::nullopt},
                              {"audit", 3, std::vector<std::vector<int32_t>>{{1}, {2, 3}}}};
  create_partitions.timeout_ms = 5000;
  create_partitions.validate_only = true;
  out.emplace_back(create_partitions);

  delete_groups_request delete_groups;
  delete_groups.groups_names = {"g", "h"};
  out.emplace_back(delete_groups);

  incremental_alter_configs_request incremental;
  incremental.resources = {{config_resource::topic, "orders",
                            {{"retention.ms", config_op::set, std::string("60000")},
                             {"segment.bytes", config_op::remove, std::nullopt}}},
                           {config_resource::broker, "", {{"num.partitions", config_op::set, std::string("3")}}}};
  incremental.validate_only = true;
  out.emplace_back(incremental);

  describe_cluster_request describe_cluster;
  describe_cluster.include_cluster_authorized_operations = true;
  out.emplace_back(describe_cluster);

  delete_records_request delete_records;
  delete_records.topics = {{"orders", {{0, 42}, {3, -1}}}, {"audit", {{1, 7}}}};
  delete_records.timeout_ms = 30000;
  out.emplace_back(delete_records);

  offset_delete_request offset_delete;
  offset_delete.group_id = "g";
  offset_delete.topics = {{"orders", {0, 2}}, {"audit", {1}}};
  out.emplace_back(offset_delete);
  return out;
}

std::vector<response_body> sample_responses() {
  std::vector<response_body> out;
  produce_response produce;
  produce.topics = {{"orders", {{0, 0, 100, -1, 5}, {1, error_code::not_leader_or_follower, -1, -1, -1}}}};
  produce.throttle_time_ms = 3;
  out.emplace_back(produce);

  fetch_response fetch;
  fetch.throttle_time_ms = 1;
  fetch.error_code = 0;
  fetch.session_id = 9;
  fetch_partition_response fp;
  fp.partition = 0;
  fp.high_watermark = 3;
  fp.last_stable_offset = 3;
  fp.log_start_offset = 0;
  fp.aborted_transactions = std::vector<aborted_transaction>{{5, 6}};
  fp.preferred_read_replica = -1;
  fp.records = sample_batch();
  fetch_partition_response empty;
  empty.partition = 1;
  empty.error_code = error_code::offset_out_of_range;
  fetch.topics = {{"orders", {fp, empty}}};
  out.emplace_back(fetch);

  list_offsets_response list;
  list.throttle_time_ms = 2;
  list.topics = {{"orders", {{0, 0, -1, 42}, {1, error_code::unknown_topic_or_partition, -1, -1}}}};
  out.emplace_back(list);

  metadata_response metadata;
  metadata.throttle_time_ms = 4;
  metadata.brokers = {{1, "b1.local", 9092, std::string("rack-a")}, {2, "b2.local", 9093, std::nullopt}};
  metadata.cluster_id = "moonmq";
  metadata.controller_id = 1;
  metadata.topics = {{0, "orders", true, {{0, 0, 1, {1, 2}, {1}}, {0, 1, 2, {2}, {2}}}},
                     {error_code::unknown_topic_or_partition, "nope", false, {}}};
  out.emplace_back(metadata);

  offset_commit_response commit;
  commit.throttle_time_ms = 5;
  commit.topics = {{"orders", {{0, 0}, {1, error_code::illegal_generation}}}};
  out.emplace_back(commit);

  offset_fetch_response fetch_offsets;
  fetch_offsets.throttle_time_ms = 6;
  fetch_offsets.topics = {{"orders", {{0, 100, std::string("meta"), 0}, {1, -1, std::nullopt, 0}}}};
  fetch_offsets.error_code = error_code::not_coordinator;
  out.emplace_back(fetch_offsets);

  find_coordinator_response find;
  find.throttle_time_ms = 7;
  find.error_code = 0;
  find.error_message = "fine";
  find.node_id = 2;
  find.host = "b2.local";
  find.port = 9093;
  out.emplace_back(find);

  join_group_response join;
  join.throttle_time_ms = 8;
  join.error_code = 0;
  join.generation_id = 4;
  join.protocol_name = "range";
  join.leader = "m-1";
  join.member_id = "m-1";
  join.members = {{"m-1", std::string("instance-1"), std::string("\x00\x01", 2)}, {"m-2", std::nullopt, ""}};
  out.emplace_back(join);

  heartbeat_response heartbeat;
  heartbeat.throttle_time_ms = 9;
  heartbeat.error_code = error_code::rebalance_in_progress;
  out.emplace_back(heartbeat);

  leave_group_response leave;
  leave.throttle_time_ms = 10;
  leave.error_code = error_code::unknown_member_id;
  leave.members = {{"m-1", std::nullopt, 0}, {"", std::string("instance-2"), error_code::fenced_instance_id}};
  out.emplace_back(leave);

  sync_group_response sync;
  sync.throttle_time_ms = 11;
  sync.error_code = 0;
  sync.assignment = std::string("\x00\x00\x00\x01", 4);
  out.emplace_back(sync);

  describe_groups_response describe;
  describe.throttle_time_ms = 16;
  described_group stable;
  stable.group_id = "g";
  stable.group_state = "Stable";
  stable.protocol_type = "consumer";
  stable.protocol_data = "range";
  stable.authorized_operations = 8;
  stable.members = {{"m-1", std::string("instance-1"), "rdkafka", "/127.0.0.1", std::string("\x00\x01", 2),
                     std::string("\x00\x02", 2)},
                    {"m-2", std::nullopt, "kafkajs", "/10.0.0.2", "", ""}};
  described_group other;
  other.error_code = error_code::not_coordinator;
  other.group_id = "h";
  describe.groups = {stable, other};
  out.emplace_back(describe);

  list_groups_response groups;
  groups.throttle_time_ms = 17;
  groups.groups = {{"g", "consumer"}, {"connect-x", "connect"}};
  out.emplace_back(groups);

  auto versions = make_api_versions_response();
  versions.throttle_time_ms = 12;
  out.emplace_back(versions);

  create_topics_response create;
  create.throttle_time_ms = 13;
  create.topics = {{"orders", 0, std::nullopt}, {"dup", error_code::topic_already_exists, std::string("exists")}};
  out.emplace_back(create);

  delete_topics_response del;
  del.throttle_time_ms = 15;
  del.responses = {{"orders", 0}, {"never", error_code::unknown_topic_or_partition}};
  out.emplace_back(del);

  init_producer_id_response init;
  init.throttle_time_ms = 14;
  init.error_code = 0;
  init.producer_id = 1234567890123;
  init.producer_epoch = 2;
  out.emplace_back(init);

  add_partitions_to_txn_response add_partitions;
  add_partitions.throttle_time_ms = 26;
  add_partitions.results = {{"orders", {{0, 0}, {2, error_code::concurrent_transactions}}}, {"audit", {}}};
  out.emplace_back(add_partitions);

  add_offsets_to_txn_response add_offsets;
  add_offsets.throttle_time_ms = 27;
  add_offsets.error_code = error_code::not_coordinator;
  out.emplace_back(add_offsets);

  end_txn_response end;
  end.throttle_time_ms = 28;
  end.error_code = error_code::invalid_txn_state;
  out.emplace_back(end);

  txn_offset_commit_response txn_commit;
  txn_commit.throttle_time_ms = 29;
  txn_commit.topics = {{"orders", {{0, 0}, {1, error_code::invalid_producer_epoch}}}};
  out.emplace_back(txn_commit);

  describe_configs_response describe_configs;
  describe_configs.throttle_time_ms = 19;
  describe_configs_result topic_result;
  topic_result.resource_type = config_resource::topic;
  topic_result.resource_name = "orders";
  describe_configs_entry retention;
  retention.name = "retention.ms";
  retention.value = "60000";
  retention.config_source = config_source::dynamic_topic;
  retention.synonyms = {{"retention.ms", std::string("60000"), config_source::dynamic_topic}};
  describe_configs_entry policy;
  policy.name = "cleanup.policy";
  policy.value = "delete";
  policy.read_only = true;
  policy.is_default = true;
  policy.config_source = config_source::default_config;
  topic_result.configs = {retention, policy};
  describe_configs_result missing;
  missing.error_code = error_code::unknown_topic_or_partition;
  missing.error_message = "unknown topic never";
  missing.resource_type = config_resource::topic;
  missing.resource_name = "never";
  describe_configs.results = {topic_result, missing};
  out.emplace_back(describe_configs);

  alter_configs_response alter_configs;
  alter_configs.throttle_time_ms = 20;
  alter_configs.responses = {{0, std::nullopt, config_resource::topic, "orders"},
                             {error_code::invalid_config, std::string("config.x: unknown"), config_resource::topic,
                              "audit"}};
  out.emplace_back(alter_configs);

  create_partitions_response create_partitions;
  create_partitions.throttle_time_ms = 21;
  create_partitions.results = {{"orders", 0, std::nullopt},
                               {"audit", error_code::invalid_partitions, std::string("must be larger")}};
  out.emplace_back(create_partitions);

  delete_groups_response delete_groups;
  delete_groups.throttle_time_ms = 18;
  delete_groups.results = {{"g", 0}, {"h", error_code::non_empty_group}};
  out.emplace_back(delete_groups);

  incremental_alter_configs_response incremental;
  incremental.throttle_time_ms = 23;
  incremental.responses = {{0, std::nullopt, config_resource::topic, "orders"},
                           {error_code::invalid_config, std::string("config.x: unknown"), config_resource::broker, ""}};
  out.emplace_back(incremental);

  delete_records_response delete_records;
  delete_records.throttle_time_ms = 25;
  delete_records.topics = {{"orders", {{0, 42, 0}, {3, -1, error_code::offset_out_of_range}}}};
  out.emplace_back(delete_records);

  describe_cluster_response describe_cluster;
  describe_cluster.throttle_time_ms = 24;
  describe_cluster.error_message = std::string("none");
  describe_cluster.cluster_id = "moonmq";
  describe_cluster.controller_id = 2;
  describe_cluster.brokers = {{1, "127.0.0.1", 9092, std::nullopt}, {2, "127.0.0.1", 9093, std::string("r2")}};
  describe_cluster.cluster_authorized_operations = 8;
  out.emplace_back(describe_cluster);

  offset_delete_response offset_delete;
  offset_delete.throttle_time_ms = 22;
  offset_delete.topics = {{"orders", {{0, 0}, {2, error_code::group_subscribed_to_topic}}}};
  out.emplace_back(offset_delete);
  return out;
}

}  // namespace moonmq::kafka::test
