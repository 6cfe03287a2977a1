#pragma once
// Ids, error values and the small result<T> used across the cluster module
// boundary (errors are values, never exceptions).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "util/names.hpp"
#include "util/result.hpp"

namespace moonmq::cluster {

/// A broker id ("b1"): 1..64 characters of [A-Za-z0-9._-] (config
/// `Cluster.BrokerId`, `Peers[].Id`). Empty means "nobody".
struct broker_id {
  std::string value;

  broker_id() = default;
  explicit broker_id(std::string v) : value(std::move(v)) {}
  bool empty() const { return value.empty(); }
  const std::string& str() const { return value; }

  friend bool operator==(const broker_id& a, const broker_id& b) { return a.value == b.value; }
  friend bool operator!=(const broker_id& a, const broker_id& b) { return a.value != b.value; }
  friend bool operator<(const broker_id& a, const broker_id& b) { return a.value < b.value; }
};

/// Where a broker listens, as its registration in the metadata log says
/// (host:port each; "" = not served).
struct broker_endpoints {
  std::string cluster;  ///< cluster listener (Raft, moves, forwarded requests)
  std::string client;   ///< client HTTP API
  std::string kafka;    ///< Kafka wire protocol
};

/// A controller epoch (the `X-Controller-Epoch` header). 0 precedes every
/// claim ("no controller seen yet"); the first claim is epoch 1.
struct epoch {
  uint64_t value = 0;

  constexpr epoch() = default;
  constexpr explicit epoch(uint64_t v) : value(v) {}
  constexpr epoch next() const { return epoch{value + 1}; }

  friend constexpr bool operator==(epoch a, epoch b) { return a.value == b.value; }
  friend constexpr bool operator!=(epoch a, epoch b) { return a.value != b.value; }
  friend constexpr bool operator<(epoch a, epoch b) { return a.value < b.value; }
  friend constexpr bool operator<=(epoch a, epoch b) { return a.value <= b.value; }
  friend constexpr bool operator>(epoch a, epoch b) { return a.value > b.value; }
  friend constexpr bool operator>=(epoch a, epoch b) { return a.value >= b.value; }
};

/// One partition of one topic. Ordered by (topic, partition).
struct topic_partition {
  std::string topic;
  int32_t partition = 0;

  friend bool operator==(const topic_partition& a, const topic_partition& b) {
    return a.partition == b.partition && a.topic == b.topic;
  }
  friend bool operator!=(const topic_partition& a, const topic_partition& b) { return !(a == b); }
  friend bool operator<(const topic_partition& a, const topic_partition& b) {
    return a.topic != b.topic ? a.topic < b.topic : a.partition < b.partition;
  }
};

/// "topic/partition", for logs and messages.
std::string to_string(const topic_partition& tp);

/// Every way a cluster operation can fail.
enum class errc {
  invalid_argument = 1,  ///< a bad id, topic, partition, state or count passed in
  stale_epoch,           ///< a change or claim older than the highest epoch seen (error::highest/holder set)
  epoch_conflict,        ///< same epoch, different controller id (error::highest/holder set)
  invalid_transition,    ///< a journal state change the MOVE protocol does not allow
  unknown_move,          ///< no journal entry with that move id
  move_in_progress,      ///< an unfinished move of the same partition exists
  invalid_request,       ///< an admin reassignment body is malformed as a whole (HTTP 400)
  io_error,              ///< a system call failed (sys_errno set, message names the file)
  corrupt_state,         ///< a persisted file does not parse (message names the file)
};

/// Stable lower-case name of `code` ("stale_epoch", ...), for logs and the
/// HTTP `error` field.
const char* to_string(errc code);

/// An error value. `sys_errno` is only set for errc::io_error; `highest` and
/// `holder` only for stale_epoch / epoch_conflict (the highest epoch seen and
/// the controller that holds it, for the answer).
struct error {
  errc code = errc::invalid_argument;
  std::string message;
  int sys_errno = 0;
  epoch highest;
  broker_id holder;
};

/// Builds an error value; `message` names the offending value or file.
inline error make_error(errc code, std::string message, int sys_errno = 0) {
  return error{code, std::move(message), sys_errno, {}, {}};
}

/// Either a T or an error (util/result.hpp). Access value() only after checking ok().
template <class T>
using result = util::basic_result<T, error>;

/// Success or an error, for operations without a value.
using status = result<void>;

/// Longest topic name (DESIGN §2, Kafka's limit).
inline constexpr size_t max_topic_length = 249;
/// Longest broker id.
using util::max_broker_id_length;

/// True when `name` is a valid topic name: [A-Za-z0-9._-]{1,249} without "..".
bool valid_topic(std::string_view name);
/// True for internal topics (`__consumer_offsets`, `__groups`, ...): they
/// never move.
bool is_internal_topic(std::string_view name);
/// True when `id` is a valid broker id: [A-Za-z0-9._-]{1,64}.
bool valid_broker_id(std::string_view id);

/// `s` in double quotes, cut to 64 characters (with "...") — for messages
/// that quote untrusted input.
std::string quote_input(std::string_view s);

}  // namespace moonmq::cluster
