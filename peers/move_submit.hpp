#pragma once
// A move handed to its source broker (POST /cluster/moves) so that a lost
// answer is neither a refusal nor a second move: the request carries a
// submission token and is sent again, with the same token, when no answer
// came; the source answers a token it has queued a move for with that
// move's row (docs/cluster.md "Moves under network faults").

#include <chrono>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "cluster/move_messages.hpp"
#include "peers/peer_survey.hpp"

namespace moonmq::transport {

/// Exchanges a move request may take before its outcome is unknown: with 5 %
/// of answers lost, one in 8,000 submissions stays unknown.
inline constexpr int move_submit_attempts = 3;

/// What the source said, after every attempt.
struct move_submit_outcome {
  int status = 0;              ///< the source's last HTTP status (202: queued); 0: no answer to the last attempt
  nlohmann::json body;         ///< the source's answer (its journal row on 202; null when none)
  std::string error;           ///< why not 202, for logs and operators
  int attempts = 0;            ///< exchanges made (1 to move_submit_attempts)
  /// Status 0 and no attempt ever left this broker (peer_result::unsent):
  /// the source cannot have queued the move.
  bool unsent = false;

  /// The source may have queued the move without saying so: no answer
  /// while a request may have arrived, or 504 (its reassigner did not
  /// answer in time; the journal may have taken it).
  bool unknown() const { return (status == 0 && !unsent) || status == 504; }
};

/// A fresh submission token: `prefix` (a broker id), the wall clock in ms and
/// 64 random bits, e.g. "b1-1733616000000-9f3a0c2e71d4b865".
std::string new_submission_token(const std::string& prefix);

/// Posts `move` to its source `peer` under controller (`epoch`,
/// `controller`), each exchange bounded by `timeout`. A missing
/// submission token is filled in first. An exchange without an answer
/// (status 0), or answered 5xx, is repeated at once (the token makes that
/// safe), up to move_submit_attempts in all; any other answer ends it.
/// `done` runs once, on an I/O thread.
void submit_move(const cluster_peer& peer, cluster::move_request move, int64_t epoch, const std::string& controller,
                 std::chrono::milliseconds timeout, std::function<void(move_submit_outcome)> done);

}  // namespace moonmq::transport
