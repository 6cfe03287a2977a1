#pragma once
// Names that travel in URL paths, file names and metadata-log entries:
// broker ids, rack names, move ids, member ids, and the topic and group
// names moonmqctl checks before a request. One character set for all of
// them, [A-Za-z0-9._-], the characters Kafka allows in a topic name
// (org.apache.kafka.common.internals.Topic, "legal characters"); each kind
// has its own length bounds.

#include <cstddef>
#include <string_view>

namespace moonmq::util {

/// `s` holds only [A-Za-z0-9._-] (true for "").
inline bool name_chars_only(std::string_view s) {
  for (const unsigned char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
      return false;
  return true;
}

/// `s` has `min` to `max` characters, all of [A-Za-z0-9._-].
inline bool is_name(std::string_view s, std::size_t min, std::size_t max) {
  return s.size() >= min && s.size() <= max && name_chars_only(s);
}

/// Longest broker id (Server.Cluster.BrokerId, Peers[].Id, metadata-log
/// entries, journal rows).
inline constexpr std::size_t max_broker_id_length = 64;

/// A broker id: 1 to max_broker_id_length characters of [A-Za-z0-9._-].
inline bool valid_broker_name(std::string_view id) { return is_name(id, 1, max_broker_id_length); }

/// A rack name (Server.Cluster.Rack, a model file's brokers[].rack): ""
/// (none) or at most 64 characters of [A-Za-z0-9._-].
inline bool valid_rack_name(std::string_view rack) { return is_name(rack, 0, 64); }

}  // namespace moonmq::util
