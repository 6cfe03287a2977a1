#pragma once
// Raft wire messages (Raft paper Figure 2, §7 InstallSnapshot; pre-vote from
// Ongaro's thesis §9.6) and their JSON encoding. The HTTP transport carries
// requests as bodies of POST /cluster/raft/vote, /cluster/raft/append and
// /cluster/raft/snapshot and the matching response as the reply body.
//
// Every message JSON is an object {"type":..., "from":"b1", "to":"b2",
// "term":N, <fields below>}. Decoding is strict: unknown type, missing or
// mistyped field, invalid broker id or topic, non-contiguous entries ->
// errc::malformed naming the field. It never throws and never crashes.

#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "raft/result.hpp"
#include "raft/types.hpp"

namespace moonmq::raft {

/// RequestVote (§5.2) or PreVote (thesis §9.6). For a pre-vote, `term` is
/// the term the sender *would* campaign in (its term + 1); nobody adopts it.
/// Fields: "last_log_index", "last_log_term", "pre_vote".
struct vote_request {
  log_index last_log_index;
  term last_log_term;
  bool pre_vote = false;
};

/// Reply to vote_request. A granted pre-vote echoes the request's term; a
/// rejection carries the voter's term. Fields: "granted", "pre_vote".
struct vote_response {
  bool granted = false;
  bool pre_vote = false;
};

/// AppendEntries (§5.3); also the heartbeat when `entries` is empty.
/// Fields: "prev_index", "prev_term", "commit", "entries":[entry...] where the
/// entries are contiguous and start at prev_index + 1, "seq" and "echo".
///
/// `seq` numbers the leader's requests (append and snapshot), increasing
/// over the life of the sending process; the follower echoes it in its
/// answer so the leader learns which request a majority answered (its lease,
/// docs/shared-storage.md "The lease"; etcd's heartbeat context plays the
/// same part). Optional on the wire: absent reads as 0, which counts for
/// nothing, so a broker of an earlier version still takes part in Raft.
///
/// `echo` is the `stamp` of the newest answer (append or snapshot) the
/// leader received from this peer in its term, sent back unchanged: the
/// follower renews its lease from its own send time of that answer, which
/// the leader provably received (docs/shared-storage.md "The lease").
/// Optional on the wire like `seq`: absent reads as 0 = none, renews nothing.
struct append_request {
  log_index prev_index;
  term prev_term;
  log_index commit;
  std::vector<log_entry> entries;
  uint64_t seq = 0;
  uint64_t echo = 0;
};

/// Reply to append_request. On success `match_index` is the last index known
/// to equal the leader's log. On rejection `reject_index` is the rejected
/// prev_index and the hint (thesis §5.3 "fast back-off") is: `conflict_term`
/// = the follower's term at reject_index (0 when its log is shorter) and
/// `conflict_index` = the first index of that term in the follower's log (or
/// its last index + 1 when shorter).
/// Fields: "success", "match_index", "reject_index", "conflict_term",
/// "conflict_index", "seq" (the answered request's, 0 when it answers a
/// request of an older term; optional on the wire, absent reads as 0),
/// "stamp".
///
/// `stamp` is the follower's steady_clock time, in nanoseconds since that
/// clock's epoch, when its driver handed the answer to the transport (the
/// core, which reads no clock, leaves it 0; raft/core_lease.hpp
/// stamp_answer sets it). The leader echoes it (append_request `echo`).
/// Only the follower ever reads it as a time; to the leader it is opaque.
/// Optional on the wire: absent reads as 0 = none.
struct append_response {
  bool success = false;
  log_index match_index;
  log_index reject_index;
  term conflict_term;
  log_index conflict_index;
  uint64_t seq = 0;
  uint64_t stamp = 0;
};

/// InstallSnapshot (§7), whole snapshot in one message (it is the ownership
/// table: small). Fields: "snapshot":{snapshot JSON}, "seq" (as in
/// append_request; optional on the wire).
struct snapshot_request {
  raft::snapshot snap;
  uint64_t seq = 0;
};

/// Reply to snapshot_request: `match_index` is the index the follower's log
/// is now known to match (its snapshot index, or its commit index when the
/// snapshot was stale and refused). Fields: "match_index", "seq" (the
/// answered request's; optional on the wire), "stamp" (as in
/// append_response; optional on the wire).
struct snapshot_response {
  log_index match_index;
  uint64_t seq = 0;
  uint64_t stamp = 0;
};

using message_body =
    std::variant<vote_request, vote_response, append_request, append_response, snapshot_request, snapshot_response>;

/// One addressed message with the sender's term.
struct message {
  node_id from;
  node_id to;
  term msg_term;
  message_body body;
};

/// Type name used in JSON "type": "vote_request", "vote_response",
/// "append_request", "append_response", "snapshot_request", "snapshot_response".
const char* type_name(const message& m);

/// HTTP route carrying the request or response: "/cluster/raft/vote",
/// "/cluster/raft/append" or "/cluster/raft/snapshot".
const char* route_for(const message& m);

/// True for the three request types (the ones that get an HTTP reply).
bool is_request(const message& m);

nlohmann::json to_json(const message& m);
result<message> message_from_json(const nlohmann::json& j);
/// Parses `text` then decodes; invalid JSON text -> errc::malformed.
result<message> parse_message(const std::string& text);

/// One-line description for logs and failing-test output.
std::string describe(const message& m);

}  // namespace moonmq::raft
