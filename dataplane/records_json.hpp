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
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "storage/record_batch.hpp"

namespace moonmq::dataplane {

/// Records of one produce request grouped by partition, with where each
/// request record went so the answer lists offsets in request order.
struct produce_plan {
  std::map<int32_t, std::vector<storage::record>> by_partition;
  /// For request record i: (partition, index inside that partition's batch).
  std::vector<std::pair<int32_t, int32_t>> placement;
};

/// Parses a produce body for a topic with `partitions` partitions. Keyed
/// records without a partition go by Kafka's murmur2 partitioner; unkeyed
/// ones all go to `sticky_partition` (one batch per request, like Kafka's
/// sticky partitioner). Every record gets `now_ms` as its timestamp.
/// Returns "" or the reason the body is invalid (naming records[i].field).
std::string parse_produce(const nlohmann::json& body, int32_t partitions, int32_t sticky_partition,
                          int64_t now_ms, produce_plan& out);

/// Appends the JSON of every record of `batches` (whole v2 batches) with
/// offset >= `from` to `out`, at most `max_records` in total. Returns the
/// offset after the last record added (or `from` when none was). Compressed
/// batches (from Kafka clients) are skipped with their offsets counted.
int64_t records_to_json(std::string_view batches, int64_t from, size_t max_records, nlohmann::json& out);

/// Base64 (RFC 4648, padded) via OpenSSL.
std::string base64_encode(std::string_view bytes);
/// Decodes base64; false on malformed input.
bool base64_decode(std::string_view text, std::string& out);
/// True when `s` is well-formed UTF-8 (no overlongs, no surrogates).
bool is_utf8(std::string_view s);

}  // namespace moonmq::dataplane
