#pragma once
// Validation of the records of one partition in a Produce request, before
// the listener assigns offsets and appends the batch verbatim. Rules from
// ../shared/docs/KAFKA.md "Produce and fetch" and Kafka's LogValidator /
// ProduceRequest.validateRecords: magic 2 only, exactly one batch per
// partition (Produce v3+), batchLength consistent with the bytes, CRC32C
// over attributes..end (storage::crc32c), lastOffsetDelta + 1 ==
// recordsCount > 0, records of uncompressed batches well formed, no control
// batches from clients, codec 0-4 (zstd only from Produce v7, KIP-110).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "kafka/errors.hpp"

namespace moonmq::kafka {

/// Kafka's default max.message.bytes (1048588 bytes): the largest batch.
inline constexpr size_t default_max_batch_bytes = 1048588;

/// Compression codecs of RecordBatch attributes bits 0-2.
enum class compression : int8_t { none = 0, gzip = 1, snappy = 2, lz4 = 3, zstd = 4 };

struct produce_validation_options {
  int16_t produce_version = 7;  ///< zstd batches need v7+
  size_t max_batch_bytes = default_max_batch_bytes;  ///< larger: MESSAGE_TOO_LARGE (10)
  bool single_batch = true;  ///< Produce v3+: exactly one batch per partition
};

/// What the listener needs from one validated batch (all read from its
/// 61-byte header; see storage/record_batch.hpp for the layout).
struct produce_batch_info {
  std::string_view bytes;     ///< the whole batch, inside the input
  size_t position = 0;        ///< byte position of the batch in the input
  int64_t base_offset = 0;    ///< as sent (clients send 0); the listener rewrites it
  int32_t record_count = 0;   ///< recordsCount (= lastOffsetDelta + 1)
  int64_t producer_id = -1;   ///< >= 0: idempotent producer (InitProducerId)
  int16_t producer_epoch = -1;
  int32_t base_sequence = -1;  ///< sequence of the first record, -1 without idempotence
  compression codec = compression::none;
  bool transactional = false;  ///< attributes bit 4: a batch of a transaction (docs/transactions.md)
  int64_t max_timestamp = -1;  ///< ms since epoch
};

/// Splits `records` (a Produce partition's records field) into RecordBatch
/// v2 batches and validates each; on success every byte belongs to a batch.
/// Errors have code invalid_batch, kafka_code set to the Kafka error to
/// answer for this partition, batch_cause set when storage's validator
/// refused the batch, and a message naming the batch position:
///   - INVALID_RECORD (87): null/empty records, trailing partial batch,
///     more than one batch (single_batch), bad length, magic != 2 (bad_magic),
///     CRC mismatch (bad_crc), bad counts, malformed records, control batch;
///   - MESSAGE_TOO_LARGE (10): a batch above max_batch_bytes;
///   - UNSUPPORTED_COMPRESSION_TYPE (76): codec > 4, or zstd before v7.
/// CORRUPT_MESSAGE (2) is never used: kafkajs retries it, and a resent bad
/// batch stays bad.
result<std::vector<produce_batch_info>> validate_produce_records(
    std::optional<std::string_view> records, const produce_validation_options& options = {});

}  // namespace moonmq::kafka
