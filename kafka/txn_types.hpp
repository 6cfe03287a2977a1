#pragma once
// Wire structs of the transaction APIs (KIP-98): AddPartitionsToTxn (24)
// v0-1, AddOffsetsToTxn (25) v0-1, EndTxn (26) v0-1, TxnOffsetCommit (28)
// v0-2. Field names follow Kafka's message schemas
// (clients/src/main/resources/common/message/*.json as of October 2024;
// v0-2 have not changed since they appeared) in snake_case; a comment gives
// the first version carrying a field (older versions neither read nor write
// it) and Kafka's name where ours differs. Durations are ms.
//
// Versions (from the schemas): v1 of 24/25/26 and 28 is v0 with the
// response sent before throttling; TxnOffsetCommit v2 adds
// committed_leader_epoch. Every one of the four is flexible from v3, which
// is not spoken (v3 of TxnOffsetCommit also adds generation_id, member_id
// and group_instance_id; v4 of AddPartitionsToTxn batches transactions).
// Producers and transactional ids come from InitProducerId (meta_types.hpp)
// and the coordinator from FindCoordinator key_type 1 (group_types.hpp).
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

// ---- AddPartitionsToTxn (key 24) ----

struct add_partitions_to_txn_topic {
  std::string name;
  std::vector<int32_t> partitions;  ///< partition indexes to add
};

struct add_partitions_to_txn_request {
  static constexpr api_key key = api_key::add_partitions_to_txn;
  std::string transactional_id;  ///< Kafka v0-3: V3AndBelowTransactionalId
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  std::vector<add_partitions_to_txn_topic> topics;  ///< Kafka: V3AndBelowTopics
};

struct add_partitions_to_txn_partition_result {
  int32_t partition_index = 0;
  int16_t error_code = 0;  ///< Kafka: PartitionErrorCode
};

struct add_partitions_to_txn_topic_result {
  std::string name;
  std::vector<add_partitions_to_txn_partition_result> results;  ///< Kafka: ResultsByPartition
};

struct add_partitions_to_txn_response {
  static constexpr api_key key = api_key::add_partitions_to_txn;
  int32_t throttle_time_ms = 0;
  std::vector<add_partitions_to_txn_topic_result> results;  ///< Kafka: ResultsByTopicV3AndBelow
};

// ---- AddOffsetsToTxn (key 25) ----

struct add_offsets_to_txn_request {
  static constexpr api_key key = api_key::add_offsets_to_txn;
  std::string transactional_id;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  std::string group_id;  ///< the consumer group whose offsets join the transaction
};

struct add_offsets_to_txn_response {
  static constexpr api_key key = api_key::add_offsets_to_txn;
  int32_t throttle_time_ms = 0;
  int16_t error_code = 0;
};

// ---- EndTxn (key 26) ----

struct end_txn_request {
  static constexpr api_key key = api_key::end_txn;
  std::string transactional_id;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  bool committed = false;  ///< true: commit, false: abort
};

struct end_txn_response {
  static constexpr api_key key = api_key::end_txn;
  int32_t throttle_time_ms = 0;
  int16_t error_code = 0;
};

// ---- TxnOffsetCommit (key 28) ----

struct txn_offset_commit_partition {
  int32_t partition_index = 0;
  int64_t committed_offset = -1;
  int32_t committed_leader_epoch = -1;  ///< v2+ (-1: unknown)
  std::optional<std::string> committed_metadata;  ///< nullable in every version
};

struct txn_offset_commit_topic {
  std::string name;
  std::vector<txn_offset_commit_partition> partitions;
};

struct txn_offset_commit_request {
  static constexpr api_key key = api_key::txn_offset_commit;
  std::string transactional_id;
  std::string group_id;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  std::vector<txn_offset_commit_topic> topics;
};

struct txn_offset_commit_partition_response {
  int32_t partition_index = 0;
  int16_t error_code = 0;
};

struct txn_offset_commit_topic_response {
  std::string name;
  std::vector<txn_offset_commit_partition_response> partitions;
};

struct txn_offset_commit_response {
  static constexpr api_key key = api_key::txn_offset_commit;
  int32_t throttle_time_ms = 0;
  std::vector<txn_offset_commit_topic_response> topics;
};

/// The error code that tells a producer of `key` at `version` it is fenced
/// by a newer one: PRODUCER_FENCED (90) for InitProducerId v4+ and
/// AddPartitionsToTxn / AddOffsetsToTxn / EndTxn v2+, else
/// INVALID_PRODUCER_EPOCH (47), which older clients handle the same way
/// (Kafka's KafkaApis maps it per request). TxnOffsetCommit, whose schema
/// names no version for it, gets 47 too; so does every other key.
int16_t producer_fenced_code(api_key key, int16_t version);

bool decode(reader& r, int16_t version, add_partitions_to_txn_request& out);
bool encode(writer& w, int16_t version, const add_partitions_to_txn_request& in);
bool decode(reader& r, int16_t version, add_partitions_to_txn_response& out);
bool encode(writer& w, int16_t version, const add_partitions_to_txn_response& in);
bool decode(reader& r, int16_t version, add_offsets_to_txn_request& out);
bool encode(writer& w, int16_t version, const add_offsets_to_txn_request& in);
bool decode(reader& r, int16_t version, add_offsets_to_txn_response& out);
bool encode(writer& w, int16_t version, const add_offsets_to_txn_response& in);
bool decode(reader& r, int16_t version, end_txn_request& out);
bool encode(writer& w, int16_t version, const end_txn_request& in);
bool decode(reader& r, int16_t version, end_txn_response& out);
bool encode(writer& w, int16_t version, const end_txn_response& in);
bool decode(reader& r, int16_t version, txn_offset_commit_request& out);
bool encode(writer& w, int16_t version, const txn_offset_commit_request& in);
bool decode(reader& r, int16_t version, txn_offset_commit_response& out);
bool encode(writer& w, int16_t version, const txn_offset_commit_response& in);

}  // namespace moonmq::kafka
