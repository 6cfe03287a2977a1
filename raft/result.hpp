#pragma once
// Error values of the raft module and a small result<T>: every fallible call
// that crosses the module boundary (propose, JSON decoding, the durable store)
// returns one of these instead of throwing.

#include <string>
#include <utility>
#include <variant>

#include "util/result.hpp"

namespace moonmq::raft {

/// Every way a raft operation can fail.
enum class errc {
  not_leader = 1,  ///< propose on a non-leader; error::leader names the known leader ("" if none)
  malformed,       ///< a wire message or entry failed validation (message says which field)
  io_error,        ///< a system call failed (sys_errno set, message names the file)
  corrupt_state,   ///< a persisted file is truncated or malformed (message names the file)
  invalid_argument ///< caller passed a value outside the documented domain
};

/// Stable lower-case name of `code` ("not_leader", "malformed", ...).
const char* to_string(errc code);

/// An error value. `leader` is only set for errc::not_leader (may be empty
/// when no leader is known); `sys_errno` only for errc::io_error.
struct error {
  errc code = errc::invalid_argument;
  std::string message;
  std::string leader;
  int sys_errno = 0;
};

/// Either a T or an error (util/result.hpp). Access value() only after checking ok().
template <class T>
using result = util::basic_result<T, error>;

/// Success or an error.
using status = util::basic_result<void, error>;

}  // namespace moonmq::raft
