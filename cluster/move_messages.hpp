#pragma once
// The bodies a move's source sends its destination (docs/cluster.md "The
// move protocol"), each defined once with its JSON mapping: the reassigner
// writes them with to_json, the destination's routes read them with the
// matching *_from_json, which checks every field (errc::invalid_request,
// naming the expected shape). Pure.

#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "cluster/types.hpp"

namespace moonmq::cluster {

/// Largest partition count an ensure may name (the topic limit of
/// dataplane::max_partitions).
inline constexpr int64_t move_max_partitions = 100000;

/// Longest submission token of a move_request.
inline constexpr size_t max_submission_bytes = 128;

/// POST /cluster/moves, a request to a move's source to queue it:
/// {"topic","partition","to","origin"?,"reason"?,"submission"?}. The
/// submission token (1 to 128 of [A-Za-z0-9._-]) makes a retry idempotent:
/// the source answers a token it has queued a move for with that move's row
/// instead of refusing the retry as `move_in_progress` (docs/cluster.md
/// "Moves under network faults").
struct move_request {
  topic_partition tp;
  std::string to;
  std::string origin = "operator";  ///< "operator" or "balancer" (absent = operator)
  std::string reason;               ///< why ("" = none; the reassigner checks its text)
  std::string submission;           ///< "" = none
};
nlohmann::json to_json(const move_request& m);
result<move_request> move_request_from_json(const nlohmann::json& j);

/// Step 1, POST /cluster/partitions/{topic}/{partition}/ensure:
/// {"from","partitions","log_start_offset","config"?,"owners"?,"move_id"?,
/// "attempt"?}. `move_id` and `attempt` make a retried ensure safe: the
/// destination refuses an ensure of a move whose attempt is not above the
/// highest it received for that move (`stale_ensure`), so an ensure that
/// arrives late never resets a copy a later one let begin.
struct move_ensure {
  std::string from;              ///< the source broker
  int32_t partitions = 0;        ///< the topic's partition count at the source (> the partition)
  int64_t log_start_offset = 0;  ///< where the destination's copy starts (>= 0)
  /// The topic's config at the source ({"segment.bytes", "retention.bytes",
  /// "retention.ms"}), or null to keep the destination's.
  nlohmann::json config = nullptr;
  std::map<int32_t, std::string> owners;  ///< each partition's owner at the source (may be empty)
  std::string move_id;           ///< the move ("" when absent: a source of an earlier version)
  int64_t attempt = 0;           ///< increases with every ensure of the move (ms-based; 0 when absent)
};
nlohmann::json to_json(const move_ensure& m);
/// The ensure of partition `partition` in `j`, or why not.
result<move_ensure> move_ensure_from_json(const nlohmann::json& j, int32_t partition);

/// Step 5, POST /cluster/offsets: the groups' committed offsets of one
/// partition, {"topic","partition","offsets":[...]} (the group
/// coordinator's list, merged higher-wins on the destination).
struct move_offsets {
  std::string topic;
  int32_t partition = 0;
  nlohmann::json offsets = nlohmann::json::array();
};
nlohmann::json to_json(const move_offsets& m);
result<move_offsets> move_offsets_from_json(const nlohmann::json& j);

/// Step 6, POST /cluster/partitions/{topic}/{partition}/confirm:
/// {"from"?,"log_end_offset","log_start_offset"?,"owner_epoch"?}.
struct move_confirm {
  std::string from;              ///< the source ("" when absent)
  int64_t log_end_offset = 0;    ///< the sealed end the destination must hold
  int64_t log_start_offset = -1; ///< the source's sealed log start; -1: absent (keep the copy's own)
  int64_t owner_epoch = 0;       ///< the cutover's owner epoch; 0: absent (an older source)
};
nlohmann::json to_json(const move_confirm& m);
result<move_confirm> move_confirm_from_json(const nlohmann::json& j);

/// POST /cluster/partitions/{topic}/{partition}/cleanup: {"owner",
/// "move_id"?}: the partition's owner, so that the broker drops its copy
/// only when it is not that owner, and the move that ended, so that a late
/// cleanup never drops the copy of a later move (`stale_cleanup`).
struct move_cleanup {
  std::string owner;
  std::string move_id;  ///< "" when absent (a source of an earlier version)
};
nlohmann::json to_json(const move_cleanup& m);
result<move_cleanup> move_cleanup_from_json(const nlohmann::json& j);

/// The destination's answer to ensure, append, confirm and cleanup:
/// {"log_end_offset", "log_start_offset"? (ensure), "copy"? ("none": an
/// ensure with shared storage), "owner"? and "already_confirmed"?
/// (confirm)}.
struct move_answer {
  int64_t log_end_offset = 0;     ///< the destination copy's log end after the step
  int64_t log_start_offset = -1;  ///< ensure: where the copy starts; -1: absent
  bool copy_none = false;         ///< ensure with shared storage: nothing will be copied
  std::string owner;              ///< confirm: the partition's owner now (the destination); "": absent
  bool already_confirmed = false; ///< confirm: an earlier try of this confirm took effect
};
nlohmann::json to_json(const move_answer& a);
result<move_answer> move_answer_from_json(const nlohmann::json& j);

}  // namespace moonmq::cluster
