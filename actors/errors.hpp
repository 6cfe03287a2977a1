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
  coded,              ///< context: (message, http status, error code string)
  /// A producer's batch or transaction marker of an epoch older than the
  /// partition knows for it (409; Kafka INVALID_PRODUCER_EPOCH, 47).
  invalid_producer_epoch,
};

/// An error with its own HTTP status and machine code (for errors of pure
/// modules such as groups/ that already know both).
caf::error make_coded_error(int http_status, std::string code, std::string message);

/// An offset_out_of_range error carrying the log's bounds.
caf::error make_out_of_range(int64_t offset, int64_t log_start, int64_t log_end);

/// The bounds of an offset_out_of_range error, if `e` is one.
bool out_of_range_bounds(const caf::error& e, int64_t& log_start, int64_t& log_end);

/// The human-readable message inside a moonmq error ("" for others).
std::string message_of(const caf::error& e);

std::string to_string(errc x);

caf::error make_error(errc x, std::string message = {});

/// The HTTP status for an error coming back from an actor request:
/// timeouts → 504, moonmq errors by code, anything else → 500.
int http_status_of(const caf::error& e);

/// A short machine-readable code for an error ("timeout", "unknown_actor", ...).
std::string error_code_of(const caf::error& e);

}  // namespace moonmq
