#pragma once
// The binary body form of the client API's records,
// `application/vnd.moonmq.records.v1` (docs/client-api.md "Binary records"):
// a length-prefixed sequence of records, binary-safe, without per-record
// JSON or base64. Produce bodies and fetch answers; the JSON form
// (records_json.hpp) stays the default.
//
// Every integer is big-endian two's complement. A byte string is an i32
// length (-1 = null where allowed) followed by that many bytes.
//   produce body : count i32 (>= 1), then count records of
//                  partition i32 (-1 = by key, else sticky) | key | value |
//                  header_count i32 | header_count x (name | value)
//   fetch answer : next_offset i64 | log_start_offset i64 | log_end_offset i64 |
//                  count i32, then count records of
//                  offset i64 | timestamp i64 (ms) | key | value |
//                  header_count i32 | header_count x (name | value)
// Header names are never null and must be UTF-8. Nothing may follow the
// last record.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dataplane/records_json.hpp"
#include "storage/record_batch.hpp"

namespace moonmq::dataplane {

/// The media type of the binary form (Content-Type of a produce body,
/// Accept of a fetch, Content-Type of its answer).
inline constexpr std::string_view records_binary_type = "application/vnd.moonmq.records.v1";

/// True when `header` (a Content-Type value, or one entry of an Accept list
/// when `list` is set) names the binary form: the media type before any
/// `;` parameters, case-insensitive, surrounding blanks ignored. With
/// `list`, any comma-separated entry may name it.
bool names_records_binary(std::string_view header, bool list = false);

/// Why a binary body is malformed: the byte position (from the start of the
/// body) of the field at fault and what is wrong with it, naming the
/// record and field (`records[3].value: length 900 runs past the end of
/// the body (512 bytes)`). An empty message means no error.
struct binary_error {
  size_t position = 0;
  std::string message;
  explicit operator bool() const { return !message.empty(); }
  /// "byte <position>: <message>".
  std::string to_string() const;
};

/// Writes a produce body record by record (a client; the tests). The count
/// is filled in by finish().
class produce_body_writer {
public:
  using header_list = std::vector<std::pair<std::string_view, std::optional<std::string_view>>>;
  /// Starts a body in `out` (cleared first).
  explicit produce_body_writer(std::string& out);
  /// Appends one record; `partition` -1 lets the broker choose.
  void add(int32_t partition, std::optional<std::string_view> key, std::optional<std::string_view> value,
           const header_list& headers = {});
  /// Writes the record count; the body is complete.
  void finish();
  int32_t count() const { return count_; }

private:
  std::string& out_;
  int32_t count_ = 0;
};

/// Decodes a produce body for a topic of `partitions` partitions into
/// `out`, placed as parse_produce places a JSON body (explicit partition,
/// else murmur2 of the key, else `sticky_partition`), every record stamped
/// `now_ms`. Errors (and `out` left partial, to be discarded): a count
/// below 1 or larger than the body can hold, a field cut short, a length
/// below -1 or past the end, a partition outside -1..partitions-1, a null
/// value (the log keeps no null values, as in the JSON form), a null or
/// non-UTF-8 header name, bytes after the last record.
binary_error parse_produce_binary(std::string_view body, int32_t partitions, int32_t sticky_partition,
                                  int64_t now_ms, produce_plan& out);

/// Writes the fetch answer for `batches` (whole v2 batches, as a partition
/// read returns them): the records with offset >= `from`, at most
/// `max_records`, selected as records_to_json selects them (compressed
/// batches skipped with their offsets; control batches and, with
/// `committed`, aborted transactions' batches too), with the envelope
/// fields. Returns the next offset (also written into the answer).
int64_t records_to_binary(std::string_view batches, int64_t from, size_t max_records, int64_t log_start_offset,
                          int64_t log_end_offset, std::string& out, storage::committed_filter* committed = nullptr);

/// Appends one fetched record (offset, timestamp, key, value, headers) in
/// the fetch answer's record layout.
void append_fetched_record(std::string& out, const storage::record_view& r);

/// A decoded fetch answer; the record views point into the answer's bytes.
struct fetched_page {
  int64_t next_offset = 0;
  int64_t log_start_offset = 0;
  int64_t log_end_offset = 0;
  std::vector<storage::record_view> records;
};

/// Decodes a fetch answer of the binary form (a client). Errors as for
/// parse_produce_binary, with `out` partial.
binary_error decode_fetch_binary(std::string_view body, fetched_page& out);

}  // namespace moonmq::dataplane
