#pragma once
// The JSON shapes of the client API's records (CONTRACT.md §3) to and from
// storage records.
//
// Produce body: {"records":[{"key"?,"key_base64"?,"value"|"value_base64",
//   "partition"?, "headers"? }]} where headers is an object {"name":"value"}
// or an array [{"key":"name","value":"v"|"value_base64":"..."}].
// Fetched record: {"offset","timestamp","key","value","headers"}; a key or
// value that is not valid UTF-8 is given as key_base64 / value_base64
// instead; a missing key is null.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "storage/record_batch.hpp"
#include "storage/txn_state.hpp"

namespace moonmq::dataplane {

/// Records of one produce request grouped by partition, with where each
/// request record went so the answer lists offsets in request order.
struct produce_plan {
  std::map<int32_t, std::vector<storage::record>> by_partition;
  /// For request record i: (partition, index inside that partition's batch).
  std::vector<std::pair<int32_t, int32_t>> placement;

  /// Appends `rec` to partition `p`'s batch and notes where it went.
  void add(int32_t p, storage::record rec);
};

/// The partition of a record that names none: Kafka's murmur2 partitioner
/// for a keyed record, else `sticky_partition`.
int32_t default_partition(const std::optional<std::string>& key, int32_t partitions, int32_t sticky_partition);

/// Parses a produce body (JSON text) for a topic with `partitions`
/// partitions. Keyed records without a partition go by Kafka's murmur2
/// partitioner; unkeyed ones all go to `sticky_partition` (one batch per
/// request, like Kafka's sticky partitioner). Every record gets `now_ms`
/// as its timestamp. Returns "" or why the body is refused: not JSON at all
/// (`malformed` set; RFC 8259, UTF-8 checked throughout, simdjson's DOM
/// parser), or not a valid produce body (naming records[i].field). Of
/// duplicate keys in an object the last counts, as in nlohmann::json.
std::string parse_produce(std::string_view text, int32_t partitions, int32_t sticky_partition, int64_t now_ms,
                          produce_plan& out, bool& malformed);

/// The produce answer {"offsets":[{"offset","partition"}, ...]}: for each
/// request record in order (`placement`, as in produce_plan), its
/// partition's base offset (`base_of`, every placed partition present) plus
/// its index in that partition's batch. Written directly, without a JSON
/// tree (one answer per produce request).
std::string offsets_json(const std::vector<std::pair<int32_t, int32_t>>& placement,
                         const std::map<int32_t, int64_t>& base_of);

/// Calls `fn` for every record of `batches` (whole v2 batches) with offset
/// >= `from`, at most `max_records`, in offset order. Returns the offset
/// after the last record passed (or `from` when none was). Compressed
/// batches (from Kafka clients) and control batches (transaction markers:
/// never client records) are skipped with their offsets counted; so are
/// the batches `committed` leaves out when given (a read_committed read:
/// the records of aborted transactions, docs/transactions.md).
int64_t for_each_fetched(std::string_view batches, int64_t from, size_t max_records,
                         const std::function<void(const storage::record_view&)>& fn,
                         storage::committed_filter* committed = nullptr);

/// One fetched record as the JSON form gives it: {"offset","timestamp",
/// "key"|"key_base64","value"|"value_base64","headers"?}.
nlohmann::json record_json(const storage::record_view& r);

/// Appends the JSON of every record of `batches` (whole v2 batches) with
/// offset >= `from` to `out`, at most `max_records` of them. Returns the
/// offset after the last record added (or `from` when none was). Compressed
/// batches (from Kafka clients) are skipped with their offsets counted.
int64_t records_to_json(std::string_view batches, int64_t from, size_t max_records, nlohmann::json& out);

/// The whole JSON fetch answer {"log_end_offset","log_start_offset",
/// "next_offset","records":[...]} for `batches`, the records chosen as
/// records_to_json chooses them, written straight into `out` (replaced)
/// without a JSON tree: the same bytes as records_to_json's records in
/// that object dumped by nlohmann::json (keys sorted, UTF-8 unescaped,
/// control characters as \b \t \n \f \r or \u00XX). Returns the next
/// offset. `committed` as for for_each_fetched. A `last_stable_offset` of
/// 0 or more (a read_committed answer) adds "last_stable_offset" first.
int64_t fetch_answer_json(std::string_view batches, int64_t from, size_t max_records, int64_t log_start_offset,
                          int64_t log_end_offset, std::string& out, storage::committed_filter* committed = nullptr,
                          int64_t last_stable_offset = -1);

/// Base64 (RFC 4648, padded) via OpenSSL.
std::string base64_encode(std::string_view bytes);
/// Decodes base64; false on malformed input.
bool base64_decode(std::string_view text, std::string& out);
/// True when `s` is well-formed UTF-8 (no overlongs, no surrogates).
bool is_utf8(std::string_view s);

}  // namespace moonmq::dataplane
