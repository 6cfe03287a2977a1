#pragma once
// Strong offset type, storage error values and a small result<T> used across
// the storage module boundary (errors are values, never exceptions).

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "util/result.hpp"

namespace moonmq::storage {

/// Logical record offset inside one partition (Kafka semantics: the n-th
/// record of a partition has offset n). Not a byte position.
struct offset {
  int64_t value = 0;

  constexpr offset() = default;
  constexpr explicit offset(int64_t v) : value(v) {}

  friend constexpr bool operator==(offset a, offset b) { return a.value == b.value; }
  friend constexpr bool operator!=(offset a, offset b) { return a.value != b.value; }
  friend constexpr bool operator<(offset a, offset b) { return a.value < b.value; }
  friend constexpr bool operator<=(offset a, offset b) { return a.value <= b.value; }
  friend constexpr bool operator>(offset a, offset b) { return a.value > b.value; }
  friend constexpr bool operator>=(offset a, offset b) { return a.value >= b.value; }
};

/// Every way a storage operation can fail.
enum class errc {
  short_buffer = 1,      ///< fewer bytes than the batch header or batchLength claims
  bad_length,            ///< batchLength negative, too small, or not matching the buffer
  bad_magic,             ///< magic byte is not 2
  bad_crc,               ///< CRC32C over attributes..end does not match the crc field
  bad_count,             ///< lastOffsetDelta + 1 != recordsCount, or recordsCount <= 0
  bad_record,            ///< a record's varints or lengths are malformed
  compressed,            ///< record iteration refused: the batch is compressed
  offset_out_of_range,   ///< read below log-start or above LEO (bounds in error)
  base_offset_mismatch,  ///< pre-assigned batch whose base offset != LEO
  batch_too_large,       ///< batch larger than the segment size limit
  corrupt_segment,       ///< a closed segment holds bytes that do not parse
  io_error,              ///< a system call failed (errno in error::sys_errno)
  invalid_argument,      ///< caller passed a value outside the documented domain
  duplicate_sequence,    ///< idempotent batch already appended (its offset in error::original)
  out_of_order_sequence, ///< idempotent batch whose sequence does not follow the producer's last
  invalid_producer_epoch,///< idempotent batch from an epoch older than the producer's current one
  corrupt_log,           ///< recovery found damage it may not cut (details in error::damaged)
  epoch_over,            ///< shared storage: a later owner epoch took the partition over (epoch_chain.hpp)
};

/// Stable lower-case name of `code` (e.g. "bad_crc"), for logs and HTTP bodies.
const char* to_string(errc code);

/// Where open found damage that recovery may not cut (errc::corrupt_log):
/// an invalid batch at or below the recovery point, or a log that ends below
/// it. Offsets [first, end) are the records the damage makes unreadable.
struct damage {
  std::string path;           ///< segment file (the partition directory when no segment is left)
  uint64_t position = 0;      ///< byte position in `path` of the first invalid batch (or its end)
  offset first{-1};           ///< first offset affected
  offset end{-1};             ///< one past the last offset known to exist there (>= first)
  offset recovery_point{-1};  ///< the checkpoint's recovery point, -1 when unknown
  bool sealed = false;        ///< `path` is a sealed segment (later segments are intact)
  std::string reason;         ///< why the bytes at `position` do not parse
};

/// An error value. For offset_out_of_range and base_offset_mismatch,
/// log_start/log_end carry the log's bounds at the time of the call
/// (log_end = LEO); otherwise they are -1.
struct error {
  errc code = errc::invalid_argument;
  std::string message;
  offset log_start{-1};
  offset log_end{-1};
  offset original{-1};  ///< duplicate_sequence: base offset of the first append
  int sys_errno = 0;
  std::optional<damage> damaged;  ///< corrupt_log: where, which offsets, why
};

/// Either a T or an error (util/result.hpp). Access value() only after checking ok().
template <class T>
using result = util::basic_result<T, error>;

/// Success or an error, for operations without a value.
using status = result<void>;

/// Builds an error value; `message` should name the offending field/value.
inline error make_error(errc code, std::string message) {
  error e;
  e.code = code;
  e.message = std::move(message);
  return e;
}

}  // namespace moonmq::storage
