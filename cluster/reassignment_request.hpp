#pragma once
// The admin reassignment body (CONTRACT §4), parsed and validated against
// what the broker knows, into the moves to queue:
//   POST /admin/reassignments
//   {"version":1,"partitions":[{"topic":"orders","partition":3,"replicas":["b2"]}]}
//   → 202 {"accepted":[{"topic","partition","replicas","from","to","state"}],
//          "rejected":[{<the entry as sent>...,"error":"<code>","message":"..."}]}
// An optional top-level "reason" (a string of at most 256 bytes without
// control characters: cluster::valid_move_reason) is journaled with every
// move of the plan and shown in its rows.
// A malformed body as a whole (not JSON, version != 1, no partitions array,
// too many entries, a bad reason) is an error value (HTTP 400); each bad entry is rejected
// on its own with a stable `error` code and a `message`:
//   invalid_entry        not an object, or topic/partition/replicas of the wrong type
//   invalid_topic        not [A-Za-z0-9._-]{1,249}, or contains ".."
//   internal_topic       a "__" topic: internal topics never move
//   invalid_partition    partition < 0 (or beyond 2^31-1)
//   invalid_replicas     not exactly one broker id (moonmq keeps one copy per partition)
//   unknown_broker       the destination is not a broker of the cluster
//   broker_not_alive     the destination is known but not alive
//   duplicate_partition  the same topic-partition appears twice (every occurrence rejected)
//   unknown_partition    the partition does not exist
//   move_in_progress     an unfinished move of the partition exists
//   source_not_alive     the current owner is down: it is the one that runs the move
// A move to the current owner is accepted as a no-op with state "done" (no
// move is queued), so that re-submitting a partly applied plan is harmless.

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "cluster/types.hpp"

namespace moonmq::cluster {

/// What validation needs to know about the cluster.
struct cluster_view {
  /// Every broker of the cluster → whether it is alive now.
  std::map<broker_id, bool> brokers;
  /// Current owner of a partition, or nullopt when the partition does not exist.
  std::function<std::optional<broker_id>(const topic_partition&)> owner_of;
  /// Optional: true when a move of the partition is unfinished.
  std::function<bool(const topic_partition&)> moving;
  /// Optional: the broker a Kafka node id names (the metadata image's
  /// numbering, docs/kafka.md). Unset: the brokers numbered 1..N in id order.
  std::function<std::optional<broker_id>(int64_t)> broker_of_node;
};

/// One accepted entry.
struct requested_move {
  topic_partition tp;
  broker_id from;     ///< current owner (the source that runs the move)
  broker_id to;       ///< the one broker named in `replicas`
  bool noop = false;  ///< to == from: nothing to do, reported as "done"

  friend bool operator==(const requested_move& a, const requested_move& b) {
    return a.tp == b.tp && a.from == b.from && a.to == b.to && a.noop == b.noop;
  }
};

/// One rejected entry: the entry as sent, a stable code, a human message.
struct rejected_entry {
  nlohmann::json entry;
  std::string error;
  std::string message;
};

struct reassignment_outcome {
  std::vector<requested_move> accepted;  ///< in request order
  std::vector<rejected_entry> rejected;  ///< in request order
  std::string reason;                    ///< the body's "reason" ("" when absent)
};

/// Most entries one request may carry.
inline constexpr size_t max_reassignment_entries = 10000;

/// Parses and validates `body` against `view`. Errors (whole body, HTTP 400):
/// invalid_request — not JSON, not an object, "version" not 1 (the message
/// says which versions are supported), "partitions" missing or not an array,
/// more than max_reassignment_entries entries.
result<reassignment_outcome> parse_reassignment_request(std::string_view body, const cluster_view& view);

/// The 202 answer: {"accepted":[...],"rejected":[...]} (shapes above).
nlohmann::json to_json(const reassignment_outcome& outcome);

}  // namespace moonmq::cluster
