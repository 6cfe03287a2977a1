#pragma once
// Consumer-group ids, error values and a small result<T> used across the
// groups module boundary (errors are values, never exceptions).

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "util/result.hpp"

namespace moonmq::groups {

/// A group's generation (Kafka's generationId): starts at 0 for a group that
/// never had a member and grows by one on every membership or assignment
/// change. Commits carrying an older generation are fenced.
struct generation {
  int32_t value = 0;

  constexpr generation() = default;
  constexpr explicit generation(int32_t v) : value(v) {}

  friend constexpr bool operator==(generation a, generation b) { return a.value == b.value; }
  friend constexpr bool operator!=(generation a, generation b) { return a.value != b.value; }
  friend constexpr bool operator<(generation a, generation b) { return a.value < b.value; }
};

/// topic name → sorted partition numbers assigned to one member. Every topic
/// the member subscribes to is present, possibly with an empty list.
using assignment = std::map<std::string, std::vector<int32_t>>;

/// Most bytes of metadata a commit may attach to an offset (Kafka's
/// offset.metadata.max.bytes default; a longer one is refused:
/// OFFSET_METADATA_TOO_LARGE over Kafka, 400 over HTTP).
inline constexpr size_t max_offset_metadata_bytes = 4096;

/// One committed offset. `offset` is the next offset to read (CONTRACT §3),
/// a logical record number >= 0; `metadata` is the client's string stored
/// with it (Kafka's committed metadata; "" when none was given), at most
/// max_offset_metadata_bytes.
struct partition_offset {
  std::string topic;
  int32_t partition = 0;
  int64_t offset = 0;
  std::string metadata;

  partition_offset() = default;
  partition_offset(std::string t, int32_t p, int64_t o, std::string m = {})
    : topic(std::move(t)), partition(p), offset(o), metadata(std::move(m)) {}

  friend bool operator==(const partition_offset& a, const partition_offset& b) {
    return a.topic == b.topic && a.partition == b.partition && a.offset == b.offset && a.metadata == b.metadata;
  }
};

/// One group's committed offset of one partition, with its metadata (what a
/// moved partition's source pushes to the destination).
struct group_offset {
  std::string group;
  int64_t offset = 0;
  std::string metadata;

  friend bool operator==(const group_offset& a, const group_offset& b) {
    return a.group == b.group && a.offset == b.offset && a.metadata == b.metadata;
  }
};

/// Every way a groups operation can fail.
enum class errc {
  invalid_group_id = 1,  ///< group id outside [A-Za-z0-9._-]{1,249}, or "." / ".."
  unknown_member,        ///< member id not (or no longer) in the group
  unknown_topic,         ///< join names a topic whose partition count is unknown
  illegal_generation,    ///< commit fenced: its generation is not the group's current one
  invalid_argument,      ///< empty topic list, negative partition/offset, bad count
  io_error,              ///< a system call failed (sys_errno set, message names the file)
  corrupt_state,         ///< a persisted file does not parse (message names the file)
};

/// Stable lower-case name of `code` ("unknown_member", ...), for logs and the
/// HTTP `error` field.
const char* to_string(errc code);

/// Kafka protocol error code for `code` (KAFKA.md): unknown_member 25,
/// illegal_generation 22, unknown_topic 3, invalid_group_id 24,
/// invalid_argument 42 (INVALID_REQUEST), io_error/corrupt_state -1 (UNKNOWN).
int16_t kafka_error_code(errc code);

/// An error value; `sys_errno` is only set for errc::io_error.
struct error {
  errc code = errc::invalid_argument;
  std::string message;
  int sys_errno = 0;
};

/// Builds an error value; `message` names the offending value or file.
inline error make_error(errc code, std::string message, int sys_errno = 0) {
  return error{code, std::move(message), sys_errno};
}

/// Either a T or an error (util/result.hpp). Access value() only after checking ok().
template <class T>
using result = util::basic_result<T, error>;

/// Success or an error, for operations without a value.
using status = result<void>;

/// Longest group id, as Kafka's topic-name limit (249): the id is used as a
/// directory name under `<data_dir>/__groups/`.
inline constexpr size_t max_group_id_length = 249;

/// True when `id` matches [A-Za-z0-9._-]{1,249} and is not "." or ".."
/// (those two would name a directory other than the group's own).
bool is_valid_group_id(std::string_view id);

/// As is_valid_group_id, with an errc::invalid_group_id error that quotes
/// the id (truncated) and says which rule it breaks.
status validate_group_id(std::string_view id);

}  // namespace moonmq::groups
