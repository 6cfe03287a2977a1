#pragma once
// Kafka's protocol error codes (the numbers on the wire) and the codec's own
// error values. Source for the numbers: the Kafka protocol guide, "Error
// Codes" table (org.apache.kafka.common.protocol.Errors).

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "storage/types.hpp"
#include "util/result.hpp"

namespace moonmq::kafka {

/// Kafka error codes (int16 on the wire) used by the supported subset
/// (../shared/docs/KAFKA.md "Errors clients react to").
namespace error_code {
inline constexpr int16_t unknown_server_error = -1;
inline constexpr int16_t none = 0;
inline constexpr int16_t offset_out_of_range = 1;
inline constexpr int16_t corrupt_message = 2;  ///< retriable for kafkajs: not for permanent faults
inline constexpr int16_t unknown_topic_or_partition = 3;
inline constexpr int16_t invalid_fetch_size = 4;
inline constexpr int16_t leader_not_available = 5;
inline constexpr int16_t not_leader_or_follower = 6;
inline constexpr int16_t request_timed_out = 7;
inline constexpr int16_t message_too_large = 10;
inline constexpr int16_t offset_metadata_too_large = 12;
inline constexpr int16_t coordinator_load_in_progress = 14;  ///< retriable
inline constexpr int16_t coordinator_not_available = 15;     ///< retriable
inline constexpr int16_t not_coordinator = 16;               ///< retriable
inline constexpr int16_t invalid_topic_exception = 17;
inline constexpr int16_t record_list_too_large = 18;
inline constexpr int16_t not_enough_replicas = 19;
inline constexpr int16_t invalid_required_acks = 21;
inline constexpr int16_t illegal_generation = 22;
inline constexpr int16_t inconsistent_group_protocol = 23;
inline constexpr int16_t invalid_group_id = 24;
inline constexpr int16_t unknown_member_id = 25;
inline constexpr int16_t invalid_session_timeout = 26;
inline constexpr int16_t rebalance_in_progress = 27;
inline constexpr int16_t invalid_commit_offset_size = 28;
inline constexpr int16_t unsupported_version = 35;
inline constexpr int16_t topic_already_exists = 36;
inline constexpr int16_t invalid_partitions = 37;
inline constexpr int16_t invalid_replication_factor = 38;
inline constexpr int16_t invalid_replica_assignment = 39;
inline constexpr int16_t invalid_config = 40;
inline constexpr int16_t invalid_request = 42;
inline constexpr int16_t out_of_order_sequence_number = 45;
inline constexpr int16_t duplicate_sequence_number = 46;
inline constexpr int16_t invalid_producer_epoch = 47;
// Transactions (KIP-98). Only concurrent_transactions is retriable (Kafka's
// RetriableException); the others end the transaction or the producer.
inline constexpr int16_t invalid_txn_state = 48;
inline constexpr int16_t invalid_producer_id_mapping = 49;
inline constexpr int16_t invalid_transaction_timeout = 50;
inline constexpr int16_t concurrent_transactions = 51;  ///< retriable
inline constexpr int16_t transaction_coordinator_fenced = 52;
inline constexpr int16_t transactional_id_authorization_failed = 53;  ///< listed only: no ACLs
inline constexpr int16_t unknown_producer_id = 59;
inline constexpr int16_t reassignment_in_progress = 60;
inline constexpr int16_t non_empty_group = 68;
inline constexpr int16_t group_id_not_found = 69;
inline constexpr int16_t unsupported_compression_type = 76;
inline constexpr int16_t member_id_required = 79;
inline constexpr int16_t fenced_instance_id = 82;
inline constexpr int16_t group_subscribed_to_topic = 86;
inline constexpr int16_t invalid_record = 87;
/// A newer producer has the same transactional id. Only InitProducerId v4+
/// and AddPartitionsToTxn / AddOffsetsToTxn / EndTxn v2+ know it; older
/// versions get invalid_producer_epoch instead (producer_fenced_code in
/// txn_types.hpp), as Kafka's broker answers.
inline constexpr int16_t producer_fenced = 90;
}  // namespace error_code

/// Kafka's upper-case name of `code` ("UNSUPPORTED_VERSION"), or "UNKNOWN"
/// for a number outside the table above.
const char* error_code_name(int16_t code);

/// Every way the codec can refuse bytes or values.
enum class errc {
  truncated = 1,        ///< a read needs more bytes than the frame/body holds
  bad_length,           ///< a length/count prefix is invalid (negative where null is not allowed, over-long varint)
  trailing_bytes,       ///< bytes left after the last field of a request body
  negative_size,        ///< the frame's int32 size prefix is negative
  frame_too_small,      ///< the size prefix is below the smallest request header (10 bytes)
  frame_too_large,      ///< the size prefix is above the configured request size limit
  unsupported_api_key,  ///< api_key not in supported_apis(): the connection is closed
  unsupported_version,  ///< api_version outside the advertised range (see error_response_frame)
  invalid_batch,        ///< Produce records fail RecordBatch v2 validation (see error::kafka_code)
  value_too_large,      ///< encoder: a string/array longer than its length prefix can carry
};

/// Stable lower-case name of `code` ("frame_too_large"), for logs.
const char* to_string(errc code);

/// A codec error. `message` names the field or value. Request-level errors
/// carry the request header fields when they were read (else -1), so the
/// caller can log them and answer ApiVersions. `kafka_code` is the Kafka
/// error code to answer with where one applies (batch validation,
/// unsupported_version), else error_code::none.
struct error {
  errc code = errc::truncated;
  std::string message;
  int16_t kafka_code = error_code::none;
  int16_t api_key = -1;
  int16_t api_version = -1;
  int32_t correlation_id = -1;
  std::optional<storage::errc> batch_cause;  ///< invalid_batch: storage's finding (bad_crc, bad_magic, ...)
};

/// Builds an error value; `message` should name the offending field/value.
inline error make_error(errc code, std::string message, int16_t kafka_code = error_code::none) {
  error e;
  e.code = code;
  e.message = std::move(message);
  e.kafka_code = kafka_code;
  return e;
}

/// Either a T or an error (util/result.hpp). Access value() only after ok().
template <class T>
using result = util::basic_result<T, error>;

/// Success or an error.
using status = result<void>;

}  // namespace moonmq::kafka
