#pragma once
// Kafka RecordBatch v2 (magic 2): encoder, validator, a read-only view over
// an encoded batch and a decoder for the records of uncompressed batches.
//
// Layout (Kafka protocol "Record Batch", all integers big-endian):
//   0 baseOffset i64 | 8 batchLength i32 | 12 partitionLeaderEpoch i32 |
//   16 magic i8 (=2) | 17 crc u32 | 21 attributes i16 | 23 lastOffsetDelta i32 |
//   27 baseTimestamp i64 | 35 maxTimestamp i64 | 43 producerId i64 |
//   51 producerEpoch i16 | 53 baseSequence i32 | 57 recordsCount i32 | 61 records
// batchLength counts the bytes after the batchLength field (total = 12 + it).
// CRC32C (Castagnoli) covers bytes [21, end), so baseOffset, batchLength and
// partitionLeaderEpoch can change without recomputing it.
// Each record: length varint, attributes i8, timestampDelta varlong,
// offsetDelta varint, keyLength varint (-1 = null), key, valueLength varint
// (-1 = null), value, headerCount varint, headers (keyLength varint, key,
// valueLength varint (-1 = null), value). Varints are zigzag LEB128 as in
// protobuf.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "storage/types.hpp"

namespace moonmq::storage {

inline constexpr size_t batch_header_size = 61;   ///< bytes before the first record
inline constexpr size_t batch_length_offset = 8;  ///< position of batchLength
inline constexpr size_t batch_log_overhead = 12;  ///< baseOffset + batchLength
inline constexpr size_t batch_crc_offset = 17;    ///< position of crc
inline constexpr size_t batch_attributes_offset = 21;  ///< CRC covers from here
inline constexpr int8_t batch_magic_v2 = 2;
inline constexpr uint16_t attr_compression_mask = 0x07;  ///< codec bits 0..2
/// timestampType bit: set = LogAppendTime, every record's timestamp is the
/// batch maxTimestamp; clear = CreateTime, baseTimestamp + timestampDelta.
inline constexpr uint16_t attr_log_append_time = 0x08;
inline constexpr uint16_t attr_transactional = 0x10;
inline constexpr uint16_t attr_control = 0x20;

/// One header of a record: UTF-8 key, value bytes (null allowed on decode).
struct record_header {
  std::string key;
  std::optional<std::string> value;
};

/// One record to encode. `key` nullopt encodes keyLength -1; an empty string
/// encodes a present, empty key. `timestamp_ms` is milliseconds since epoch.
struct record {
  std::optional<std::string> key;
  std::string value;
  std::vector<record_header> headers;
  int64_t timestamp_ms = 0;
};

/// Batch-level fields of an encoded batch; defaults are Kafka's "none" values.
struct batch_options {
  offset base_offset{0};
  int32_t partition_leader_epoch = -1;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  int32_t base_sequence = -1;
  int16_t attributes = 0;  ///< must not set compression bits (no codec here)
};

/// Encodes `records` (at least one) into one uncompressed v2 batch.
/// baseTimestamp is the first record's timestamp, maxTimestamp the largest.
/// Errors: invalid_argument when `records` is empty or options set codec bits.
result<std::string> encode_batch(const std::vector<record>& records,
                                 const batch_options& options = {});

/// Read-only view of one validated batch. Does not own the bytes: they must
/// outlive the view.
class batch_view {
 public:
  /// Validates the batch at the start of `bytes` (which may hold more bytes
  /// after it): header length, magic, batchLength, CRC32C and
  /// lastOffsetDelta + 1 == recordsCount > 0. With `deep`, the records of an
  /// uncompressed batch are also parsed (sane varints, lengths inside the
  /// batch, offsetDelta == index, exact count, no trailing bytes).
  /// Errors: short_buffer, bad_length, bad_magic, bad_crc, bad_count, bad_record.
  static result<batch_view> parse(std::string_view bytes, bool deep = true);

  /// Whole encoded batch (12 + batchLength bytes).
  std::string_view bytes() const { return bytes_; }
  size_t size() const { return bytes_.size(); }

  offset base_offset() const;
  offset last_offset() const;  ///< base + lastOffsetDelta
  int32_t count() const;       ///< recordsCount
  int32_t partition_leader_epoch() const;
  int16_t attributes() const;
  int compression_codec() const { return attributes() & attr_compression_mask; }
  bool is_control() const { return (attributes() & attr_control) != 0; }
  int64_t base_timestamp() const;
  int64_t max_timestamp() const;  ///< ms since epoch
  int64_t producer_id() const;
  int16_t producer_epoch() const;
  int32_t base_sequence() const;
  uint32_t crc() const;

 private:
  explicit batch_view(std::string_view b) : bytes_(b) {}
  std::string_view bytes_;
};

/// How much of a batch an appender checks (partition_log::append).
enum class batch_check : uint8_t {
  /// batch_view::parse(bytes, true): CRC32C, counts, and the records of an
  /// uncompressed batch.
  full,
  /// The framing (peek_batch_header: magic 2, batchLength equal to the
  /// buffer, lastOffsetDelta and baseOffset in range) and the CRC32C, no
  /// record parse: the caller ran batch_view::parse(bytes, true) on these
  /// bytes, which changed since at most in baseOffset (which the CRC does
  /// not cover). kafka::validate_produce_records does, for a Produce
  /// request's records, so its batch is CRC-checked once on its way to the
  /// log (docs/storage.md "CRC32C: once per batch").
  verified,
};

/// Size of the batch at the start of `bytes` read from its batchLength
/// (12 + batchLength), or an error if fewer than 12 bytes are present or the
/// length is below the 61-byte header. Does not check magic or CRC.
result<size_t> peek_batch_size(std::string_view bytes);

/// Framing fields of a batch header, read without checking the CRC.
struct batch_header_info {
  offset base{0};
  offset last{0};
  size_t size = 0;  ///< 12 + batchLength
  int64_t max_timestamp = -1;
  int16_t attributes = 0;
  int64_t producer_id = -1;     ///< -1: not an idempotent batch
  int16_t producer_epoch = -1;
  int32_t base_sequence = -1;
  /// Control batches only: the marker type of the first record's key
  /// (control_abort, control_commit), read when the bytes given hold that
  /// key; -1 otherwise (not a control batch, or its key not in the bytes).
  int16_t control_type = -1;
};

/// Reads base/last offset, size, maxTimestamp, attributes and the producer
/// fields (and, for a control batch whose first record key lies within
/// `bytes` and the batch, its control_type) from the 61-byte header at
/// the start of `bytes`; checks magic 2, batchLength >= 49 and
/// lastOffsetDelta >= 0 but not the CRC (cheap walk over stored segments).
/// Errors: short_buffer, bad_length, bad_magic, bad_count.
result<batch_header_info> peek_batch_header(std::string_view bytes);

/// Control record types (Kafka's ControlRecordType): the key of a control
/// record is [version i16 = 0][type i16]. ABORT and COMMIT are the
/// transaction markers (EndTransactionMarker).
inline constexpr int16_t control_abort = 0;
inline constexpr int16_t control_commit = 1;
/// Bytes after the batch header that always hold a marker's record up to
/// the end of its key (length, attributes, timestampDelta, offsetDelta and
/// keyLength varints at most 5 + 1 + 10 + 5 + 5 bytes, then the 4-byte key).
inline constexpr size_t control_key_reach = 30;

/// A transaction marker batch (Kafka's EndTransactionMarker as written by
/// the partition leader): RecordBatch v2, attributes transactional|control
/// (0x30), producerId/producerEpoch of the transaction, baseSequence -1,
/// one record at offset delta 0 with timestamp `timestamp_ms`, key
/// [i16 version 0][i16 `type`] and value [i16 version 0][i32
/// `coordinator_epoch`], no headers; baseOffset 0 (assigned on append).
/// Errors: invalid_argument when `type` is not control_abort/control_commit
/// or `producer_id` < 0.
result<std::string> make_control_batch(int64_t producer_id, int16_t producer_epoch, int16_t type,
                                       int32_t coordinator_epoch, int64_t timestamp_ms);

/// The control type (key [version][type]) of the first record of the
/// control batch `batch`. Errors: invalid_argument (not a control batch),
/// bad_record (no record, or its key is not 4 bytes of version 0).
result<int16_t> control_type_of(const batch_view& batch);

/// The coordinator epoch of the transaction marker `batch` (value
/// [i16 version 0][i32 coordinatorEpoch]). Errors as control_type_of.
result<int32_t> marker_coordinator_epoch(const batch_view& batch);

/// Rewrites baseOffset of the batch at the start of `bytes` in place. The CRC
/// does not cover the field, so the batch stays valid. Errors: short_buffer.
status set_base_offset(std::string& bytes, offset base);

/// CRC32C (Castagnoli, polynomial 0x1EDC6F41, reflected, init and xorout
/// 0xFFFFFFFF) of `data`, as used by RecordBatch v2. Uses the SSE4.2 crc32
/// instruction when the CPU has it, else crc32c_portable.
uint32_t crc32c(std::string_view data);

/// The same CRC through boost::crc_optimal (table driven, any CPU).
uint32_t crc32c_portable(std::string_view data);

/// One decoded record; views point into the batch bytes.
struct record_view {
  offset off{0};
  int64_t timestamp_ms = 0;
  std::optional<std::string_view> key;
  std::optional<std::string_view> value;
  std::vector<std::pair<std::string_view, std::optional<std::string_view>>> headers;
};

/// Decodes every record of an uncompressed batch. Errors: compressed (codec
/// bits != 0; the batch is still a valid stored batch), bad_record, bad_count.
result<std::vector<record_view>> decode_records(const batch_view& batch);

/// A record located by timestamp: its offset and its timestamp (ms).
struct timestamp_offset {
  offset off{0};
  int64_t timestamp = -1;
};

/// The first record of `batch` whose offset is >= `min_offset` and whose
/// timestamp is >= `target`, or nullopt (also when maxTimestamp < target).
/// The inner loop of Kafka's FileRecords.searchForTimestamp. A record's
/// timestamp is baseTimestamp + timestampDelta (CreateTime), or the batch
/// maxTimestamp for every record when attr_log_append_time is set. A
/// compressed batch is not decoded (no codecs here): it answers its first
/// offset >= `min_offset` with the batch maxTimestamp, so the offset may
/// precede the first matching record (Kafka decompresses and is exact).
/// Errors: bad_record, bad_count (the decode_records errors).
result<std::optional<timestamp_offset>> find_timestamp_in_batch(const batch_view& batch,
                                                                int64_t target, offset min_offset);

}  // namespace moonmq::storage
