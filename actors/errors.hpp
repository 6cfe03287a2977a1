#pragma once
// moonmq's actor-level error codes (CAF error category "moonmq").

#include <cstdint>
#include <string>

#include <caf/error.hpp>

namespace moonmq {

enum class errc : uint8_t {
  unknown_actor = 1,  ///< no enrolled actor with that id
  not_ready,          ///< the component is starting or stopping
  invalid_request,    ///< the request names a bad value (400)
  unknown_topic,      ///< no such topic (404)
  unknown_partition,  ///< no such partition (404)
  offset_out_of_range,  ///< context: (message, log_start, log_end) (400)
  storage_error,      ///< the partition log failed (500)
  partition_offline,  ///< the partition's log could not be opened (503)
  partition_moved,    ///< the partition is sealed for a move (503, retry at the owner)
  coded,              ///< context: (message, fault, error code string)
  /// A producer's batch or transaction marker of an epoch older than the
  /// partition knows for it (409; Kafka INVALID_PRODUCER_EPOCH, 47).
  invalid_producer_epoch,
  /// A peer's HTTP answer passed on as it was: context (message, the
  /// peer's status, error code string). The status was chosen at the
  /// peer's edge; this broker's edge answers it again.
  relayed,
  /// A move's destination does not end where the source says it must:
  /// context (message, the destination's log-end offset), so that the
  /// source can resume from there (409 offset_mismatch).
  offset_mismatch,
};

/// What kind of failure a coded error is. Actors name the kind; the edge
/// turns it into an HTTP status (http_status_of, CONTRACT §3) or a Kafka
/// error code, so no actor chooses a status.
enum class fault : uint8_t {
  invalid = 1,  ///< the request is malformed or names a bad value (HTTP 400)
  not_found,    ///< no such topic, group, member, move or broker (404)
  conflict,     ///< the state does not allow it now: an epoch moved on, a move is under way (409)
  misdirected,  ///< another broker serves it (421)
  unavailable,  ///< retry later or elsewhere: no leader, not running, outcome unknown (503)
  timeout,      ///< no answer in time (504)
  internal,     ///< an I/O failure or corrupt state (500)
};

/// An error with its kind and machine code (`code`, the `error` field of
/// CONTRACT §3, e.g. "move_state_changed").
caf::error make_coded_error(fault kind, std::string code, std::string message);

/// The kind of any error coming back from an actor request: a coded
/// error's own, a moonmq code's, a CAF timeout's (timeout) or receiver
/// down (unavailable); internal for anything else.
fault fault_of(const caf::error& e);

/// The kind a peer's HTTP answer with `status` stands for (0, no answer:
/// unavailable; a status outside the table: internal).
fault fault_of_status(int status);

/// A peer's error answer (`status`, its `error` code and message) passed on
/// as it was: http_status_of gives `status` back when it is 400–599 (else
/// 503 for 0, no answer, and 500), fault_of its kind (fault_of_status).
caf::error make_relayed_error(int status, std::string code, std::string message);

/// An offset_out_of_range error carrying the log's bounds.
caf::error make_out_of_range(int64_t offset, int64_t log_start, int64_t log_end);

/// The bounds of an offset_out_of_range error, if `e` is one.
bool out_of_range_bounds(const caf::error& e, int64_t& log_start, int64_t& log_end);

/// An offset_mismatch error carrying the destination's log-end offset.
caf::error make_offset_mismatch(int64_t log_end, std::string message);

/// The log-end offset of an offset_mismatch error, if `e` is one.
bool mismatch_log_end(const caf::error& e, int64_t& log_end);

/// The human-readable message inside a moonmq error ("" for others).
std::string message_of(const caf::error& e);

std::string to_string(errc x);

caf::error make_error(errc x, std::string message = {});

/// The HTTP status of an error's kind (fault_of): invalid 400, not_found
/// 404, conflict 409, misdirected 421, unavailable 503, timeout 504,
/// internal 500; a relayed peer answer's own status. The one table from kinds to statuses, for the edge (api/)
/// and for the balancer's executed rows, which show peers' HTTP answers
/// beside local ones.
int http_status_of(const caf::error& e);

/// A short machine-readable code for an error ("timeout", "unknown_actor", ...).
std::string error_code_of(const caf::error& e);

}  // namespace moonmq
