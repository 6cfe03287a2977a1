#include "kafka/errors.hpp"

namespace moonmq::kafka {

const char* error_code_name(int16_t code) {
  switch (code) {
    case error_code::unknown_server_error: return "UNKNOWN_SERVER_ERROR";
    case error_code::none: return "NONE";
    case error_code::offset_out_of_range: return "OFFSET_OUT_OF_RANGE";
    case error_code::corrupt_message: return "CORRUPT_MESSAGE";
    case error_code::unknown_topic_or_partition: return "UNKNOWN_TOPIC_OR_PARTITION";
    case error_code::invalid_fetch_size: return "INVALID_FETCH_SIZE";
    case error_code::leader_not_available: return "LEADER_NOT_AVAILABLE";
    case error_code::not_leader_or_follower: return "NOT_LEADER_OR_FOLLOWER";
    case error_code::request_timed_out: return "REQUEST_TIMED_OUT";
    case error_code::message_too_large: return "MESSAGE_TOO_LARGE";
    case error_code::offset_metadata_too_large: return "OFFSET_METADATA_TOO_LARGE";
    case error_code::coordinator_load_in_progress: return "COORDINATOR_LOAD_IN_PROGRESS";
    case error_code::coordinator_not_available: return "COORDINATOR_NOT_AVAILABLE";
    case error_code::not_coordinator: return "NOT_COORDINATOR";
    case error_code::invalid_topic_exception: return "INVALID_TOPIC_EXCEPTION";
    case error_code::record_list_too_large: return "RECORD_LIST_TOO_LARGE";
    case error_code::not_enough_replicas: return "NOT_ENOUGH_REPLICAS";
    case error_code::invalid_required_acks: return "INVALID_REQUIRED_ACKS";
    case error_code::illegal_generation: return "ILLEGAL_GENERATION";
    case error_code::inconsistent_group_protocol: return "INCONSISTENT_GROUP_PROTOCOL";
    case error_code::invalid_group_id: return "INVALID_GROUP_ID";
    case error_code::unknown_member_id: return "UNKNOWN_MEMBER_ID";
    case error_code::invalid_session_timeout: return "INVALID_SESSION_TIMEOUT";
    case error_code::rebalance_in_progress: return "REBALANCE_IN_PROGRESS";
    case error_code::invalid_commit_offset_size: return "INVALID_COMMIT_OFFSET_SIZE";
    case error_code::unsupported_version: return "UNSUPPORTED_VERSION";
    case error_code::topic_already_exists: return "TOPIC_ALREADY_EXISTS";
    case error_code::invalid_partitions: return "INVALID_PARTITIONS";
    case error_code::invalid_replication_factor: return "INVALID_REPLICATION_FACTOR";
    case error_code::invalid_request: return "INVALID_REQUEST";
    case error_code::out_of_order_sequence_number: return "OUT_OF_ORDER_SEQUENCE_NUMBER";
    case error_code::duplicate_sequence_number: return "DUPLICATE_SEQUENCE_NUMBER";
    case error_code::invalid_producer_epoch: return "INVALID_PRODUCER_EPOCH";
    case error_code::invalid_txn_state: return "INVALID_TXN_STATE";
    case error_code::invalid_producer_id_mapping: return "INVALID_PRODUCER_ID_MAPPING";
    case error_code::invalid_transaction_timeout: return "INVALID_TRANSACTION_TIMEOUT";
    case error_code::concurrent_transactions: return "CONCURRENT_TRANSACTIONS";
    case error_code::transaction_coordinator_fenced: return "TRANSACTION_COORDINATOR_FENCED";
    case error_code::transactional_id_authorization_failed: return "TRANSACTIONAL_ID_AUTHORIZATION_FAILED";
    case error_code::unknown_producer_id: return "UNKNOWN_PRODUCER_ID";
    case error_code::reassignment_in_progress: return "REASSIGNMENT_IN_PROGRESS";
    case error_code::non_empty_group: return "NON_EMPTY_GROUP";
    case error_code::group_id_not_found: return "GROUP_ID_NOT_FOUND";
    case error_code::unsupported_compression_type: return "UNSUPPORTED_COMPRESSION_TYPE";
    case error_code::member_id_required: return "MEMBER_ID_REQUIRED";
    case error_code::fenced_instance_id: return "FENCED_INSTANCE_ID";
    case error_code::invalid_record: return "INVALID_RECORD";
    case error_code::producer_fenced: return "PRODUCER_FENCED";
    default: return "UNKNOWN";
  }
}

const char* to_string(errc code) {
  switch (code) {
    case errc::truncated: return "truncated";
    case errc::bad_length: return "bad_length";
    case errc::trailing_bytes: return "trailing_bytes";
    case errc::negative_size: return "negative_size";
    case errc::frame_too_small: return "frame_too_small";
    case errc::frame_too_large: return "frame_too_large";
    case errc::unsupported_api_key: return "unsupported_api_key";
    case errc::unsupported_version: return "unsupported_version";
    case errc::invalid_batch: return "invalid_batch";
    case errc::value_too_large: return "value_too_large";
  }
  return "unknown";
}

}  // namespace moonmq::kafka
