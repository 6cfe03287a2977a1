#pragma once
// moonmq's actor-level error codes (CAF error category "moonmq").

#include <cstdint>
#include <string>

#include <caf/error.hpp>

namespace moonmq {

enum class errc : uint8_t {
  unknown_actor = 1,  ///< no enrolled actor with that id
  not_ready,          ///< the component is starting or stopping
};

std::string to_string(errc x);

caf::error make_error(errc x, std::string message = {});

/// The HTTP status for an error coming back from an actor request:
/// timeouts → 504, moonmq errors by code, anything else → 500.
int http_status_of(const caf::error& e);

/// A short machine-readable code for an error ("timeout", "unknown_actor", ...).
std::string error_code_of(const caf::error& e);

}  // namespace moonmq
