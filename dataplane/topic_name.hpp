#pragma once
// Topic names (DESIGN.md §2): [A-Za-z0-9._-]{1,249}, not "." or "..", no
// "..". Names starting with "__" are internal and never move.

#include <string>
#include <string_view>

namespace moonmq::dataplane {

inline constexpr int max_partitions = 10000;  ///< per topic

/// "" when `name` is a valid topic name, else why not.
std::string check_topic_name(std::string_view name);

/// True for internal topics ("__" prefix).
inline bool is_internal_topic(std::string_view name) {
  return name.size() >= 2 && name[0] == '_' && name[1] == '_';
}

}  // namespace moonmq::dataplane
