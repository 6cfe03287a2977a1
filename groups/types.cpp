#include "groups/types.hpp"

namespace moonmq::groups {

const char* to_string(errc code) {
  switch (code) {
    case errc::invalid_group_id: return "invalid_group_id";
    case errc::unknown_member: return "unknown_member";
    case errc::unknown_topic: return "unknown_topic";
    case errc::illegal_generation: return "illegal_generation";
    case errc::invalid_argument: return "invalid_argument";
    case errc::io_error: return "io_error";
    case errc::corrupt_state: return "corrupt_state";
  }
  return "unknown_error";
}

int16_t kafka_error_code(errc code) {
  switch (code) {
    case errc::unknown_member: return 25;      // UNKNOWN_MEMBER_ID
    case errc::illegal_generation: return 22;  // ILLEGAL_GENERATION
    case errc::unknown_topic: return 3;        // UNKNOWN_TOPIC_OR_PARTITION
    case errc::invalid_group_id: return 24;    // INVALID_GROUP_ID
    case errc::invalid_argument: return 42;    // INVALID_REQUEST
    case errc::io_error:
    case errc::corrupt_state: return -1;       // UNKNOWN_SERVER_ERROR
  }
  return -1;
}

namespace {

bool allowed_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

std::string quoted(std::string_view id) {
  constexpr size_t shown = 64;
  std::string s = "\"";
  s.append(id.substr(0, shown));
  if (id.size() > shown)
    s += "...";
  s += "\"";
  return s;
}

}  // namespace

status validate_group_id(std::string_view id) {
  if (id.empty())
    return make_error(errc::invalid_group_id, "group id is empty");
  if (id.size() > max_group_id_length)
    return make_error(errc::invalid_group_id, "group id " + quoted(id) + " is " + std::to_string(id.size()) +
                                                  " characters long (at most 249)");
  if (id == "." || id == "..")
    return make_error(errc::invalid_group_id, "group id " + quoted(id) + " is reserved");
  for (char c : id) {
    if (!allowed_char(c))
      return make_error(errc::invalid_group_id,
                        "group id " + quoted(id) + " contains a character outside [A-Za-z0-9._-]");
  }
  return {};
}

bool is_valid_group_id(std::string_view id) {
  return validate_group_id(id).ok();
}

}  // namespace moonmq::groups
