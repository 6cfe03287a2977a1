#include "cluster/types.hpp"

namespace moonmq::cluster {
namespace {

bool allowed_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

bool all_allowed(std::string_view s) {
  for (char c : s) {
    if (!allowed_char(c))
      return false;
  }
  return true;
}

}  // namespace

std::string to_string(const topic_partition& tp) {
  return tp.topic + "/" + std::to_string(tp.partition);
}

const char* to_string(errc code) {
  switch (code) {
    case errc::invalid_argument: return "invalid_argument";
    case errc::stale_epoch: return "stale_epoch";
    case errc::epoch_conflict: return "epoch_conflict";
    case errc::invalid_transition: return "invalid_transition";
    case errc::unknown_move: return "unknown_move";
    case errc::move_in_progress: return "move_in_progress";
    case errc::invalid_request: return "invalid_request";
    case errc::io_error: return "io_error";
    case errc::corrupt_state: return "corrupt_state";
  }
  return "unknown_error";
}

bool valid_topic(std::string_view name) {
  return !name.empty() && name.size() <= max_topic_length && all_allowed(name) &&
         name.find("..") == std::string_view::npos;
}

bool is_internal_topic(std::string_view name) {
  return name.size() >= 2 && name[0] == '_' && name[1] == '_';
}

bool valid_broker_id(std::string_view id) { return util::valid_broker_name(id); }

std::string quote_input(std::string_view s) {
  constexpr size_t shown = 64;
  std::string out = "\"";
  out.append(s.substr(0, shown));
  if (s.size() > shown)
    out += "...";
  out += "\"";
  return out;
}

}  // namespace moonmq::cluster
