#pragma once
// Wire structs of the data APIs: Produce (0) v3-7, Fetch (1) v4-11,
// ListOffsets (2) v1-2. Field names follow Kafka's message schemas (Kafka
// 3.8) in snake_case; a comment gives the first version carrying a field.
// Records are RecordBatch v2 bytes (int32-length "records" type), kept
// verbatim: validate Produce records with validate_produce_records
// (produce_validation.hpp). Offsets are logical record offsets; times are ms.

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "kafka/api.hpp"
#include "kafka/wire.hpp"

namespace moonmq::kafka {

// ---- Produce (key 0) ----

struct produce_partition_data {
  int32_t index = 0;
  std::optional<std::string> records;  ///< RecordBatch v2 bytes; null is refused by validation
};

struct produce_topic_data {
  std::string name;
  std::vector<produce_partition_data> partitions;
};

struct produce_request {
  static constexpr api_key key = api_key::produce;
  std::optional<std::string> transactional_id;
  int16_t acks = -1;  ///< 0: send no response; 1: leader; -1: all in-sync replicas
  int32_t timeout_ms = 0;
  std::vector<produce_topic_data> topics;
};

struct produce_partition_response {
  int32_t index = 0;
  int16_t error_code = 0;
  int64_t base_offset = -1;         ///< offset assigned to the first record
  int64_t log_append_time_ms = -1;  ///< -1: CreateTime topics
  int64_t log_start_offset = -1;    ///< v5+
};

struct produce_topic_response {
  std::string name;
  std::vector<produce_partition_response> partitions;
};

struct produce_response {
  static constexpr api_key key = api_key::produce;
  std::vector<produce_topic_response> topics;
  int32_t throttle_time_ms = 0;
};

// ---- Fetch (key 1) ----

struct fetch_partition {
  int32_t partition = 0;
  int32_t current_leader_epoch = -1;  ///< v9+
  int64_t fetch_offset = 0;
  int64_t log_start_offset = -1;  ///< v5+ (followers only)
  int32_t partition_max_bytes = 0;
};

struct fetch_topic {
  std::string topic;
  std::vector<fetch_partition> partitions;
};

struct forgotten_topic {
  std::string topic;
  std::vector<int32_t> partitions;
};

struct fetch_request {
  static constexpr api_key key = api_key::fetch;
  int32_t replica_id = -1;  ///< -1 for consumers
  int32_t max_wait_ms = 0;
  int32_t min_bytes = 0;
  int32_t max_bytes = std::numeric_limits<int32_t>::max();
  int8_t isolation_level = 0;  ///< 0 read_uncommitted, 1 read_committed
  int32_t session_id = 0;      ///< v7+ (KIP-227 fetch sessions)
  int32_t session_epoch = -1;  ///< v7+
  std::vector<fetch_topic> topics;
  std::vector<forgotten_topic> forgotten;  ///< v7+
  std::string rack_id;                     ///< v11+
};

struct aborted_transaction {
  int64_t producer_id = 0;
  int64_t first_offset = 0;
};

struct fetch_partition_response {
  int32_t partition = 0;
  int16_t error_code = 0;
  int64_t high_watermark = -1;
  int64_t last_stable_offset = -1;  ///< = high watermark (no transactions)
  int64_t log_start_offset = -1;    ///< v5+
  std::optional<std::vector<aborted_transaction>> aborted_transactions;  ///< null: none
  int32_t preferred_read_replica = -1;  ///< v11+
  std::optional<std::string> records;   ///< whole batches, verbatim from storage
};

struct fetch_topic_response {
  std::string topic;
  std::vector<fetch_partition_response> partitions;
};

struct fetch_response {
  static constexpr api_key key = api_key::fetch;
  int32_t throttle_time_ms = 0;
  int16_t error_code = 0;  ///< v7+
  int32_t session_id = 0;  ///< v7+ (0: no fetch session)
  std::vector<fetch_topic_response> topics;
};

// ---- ListOffsets (key 2) ----

/// ListOffsets special timestamps (Kafka ListOffsetsRequest).
inline constexpr int64_t latest_timestamp = -1;
inline constexpr int64_t earliest_timestamp = -2;

struct list_offsets_partition {
  int32_t partition_index = 0;
  int64_t timestamp = latest_timestamp;  ///< ms, or latest/earliest_timestamp
};

struct list_offsets_topic {
  std::string name;
  std::vector<list_offsets_partition> partitions;
};

struct list_offsets_request {
  static constexpr api_key key = api_key::list_offsets;
  int32_t replica_id = -1;
  int8_t isolation_level = 0;  ///< v2+
  std::vector<list_offsets_topic> topics;
};

struct list_offsets_partition_response {
  int32_t partition_index = 0;
  int16_t error_code = 0;
  int64_t timestamp = -1;
  int64_t offset = -1;
};

struct list_offsets_topic_response {
  std::string name;
  std::vector<list_offsets_partition_response> partitions;
};

struct list_offsets_response {
  static constexpr api_key key = api_key::list_offsets;
  int32_t throttle_time_ms = 0;  ///< v2+
  std::vector<list_offsets_topic_response> topics;
};

bool decode(reader& r, int16_t version, produce_request& out);
bool encode(writer& w, int16_t version, const produce_request& in);
bool decode(reader& r, int16_t version, produce_response& out);
bool encode(writer& w, int16_t version, const produce_response& in);
bool decode(reader& r, int16_t version, fetch_request& out);
bool encode(writer& w, int16_t version, const fetch_request& in);
bool decode(reader& r, int16_t version, fetch_response& out);
bool encode(writer& w, int16_t version, const fetch_response& in);
bool decode(reader& r, int16_t version, list_offsets_request& out);
bool encode(writer& w, int16_t version, const list_offsets_request& in);
bool decode(reader& r, int16_t version, list_offsets_response& out);
bool encode(writer& w, int16_t version, const list_offsets_response& in);

}  // namespace moonmq::kafka
