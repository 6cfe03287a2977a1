#pragma once
// Strict field reader used by every JSON decoder of the raft module: the
// first missing or mistyped field is recorded as an errc::malformed error
// naming the object and the field; later reads return neutral values.

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "raft/result.hpp"
#include "raft/types.hpp"

namespace moonmq::raft::detail {

class json_reader {
 public:
  /// `what` names the object in error messages ("vote_request", "entry").
  json_reader(const nlohmann::json& j, std::string what);

  bool ok() const { return ok_; }
  /// True when the object has `key` (optional fields).
  bool has(const char* key) const { return j_.is_object() && j_.contains(key); }
  const error& err() const { return err_; }
  /// Records a failure (keeps only the first one).
  void fail(const std::string& field, const std::string& why);

  /// Unsigned integer field (JSON number without sign or fraction).
  uint64_t u64(const char* key);
  /// Integer field in [0, INT32_MAX].
  int32_t partition(const char* key);
  bool boolean(const char* key);
  std::string string(const char* key);
  /// Broker id; empty allowed only when `allow_empty`.
  node_id node(const char* key, bool allow_empty);
  /// Topic name validated with valid_topic().
  std::string topic(const char* key);
  /// Array field; nullptr (and a recorded failure) when missing or not an array.
  const nlohmann::json* array(const char* key);
  /// Object field; nullptr (and a recorded failure) when missing or not an object.
  const nlohmann::json* object(const char* key);

 private:
  const nlohmann::json* field(const char* key);

  const nlohmann::json& j_;
  std::string what_;
  error err_;
  bool ok_ = true;
};

}  // namespace moonmq::raft::detail
