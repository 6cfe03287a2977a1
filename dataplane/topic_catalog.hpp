#pragma once
// The broker's durable topic catalogue: `<data_dir>/topics.json`, written
// atomically (temp file, fsync, rename, directory fsync). A missing file is
// an empty catalogue; a malformed one is an error naming the file (the node
// refuses to start rather than forget topics).

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace moonmq::dataplane {

/// Topic configuration with Kafka's names; -1 = unlimited / default.
struct topic_config {
  int64_t segment_bytes = 1LL << 30;  ///< segment.bytes
  int64_t retention_bytes = -1;       ///< retention.bytes (per partition)
  int64_t retention_ms = -1;          ///< retention.ms
};

struct topic_entry {
  std::string name;
  int32_t partitions = 0;
  topic_config config;
  /// Index of the metadata-log entry that created the topic this copy
  /// belongs to (its identity: a topic deleted and created again under the
  /// same name has another); 0 = not known (a standalone broker, or a copy
  /// written before copies were stamped). JSON "created_at", absent = 0.
  int64_t created_at = 0;
  /// Being deleted (JSON "deleting": true, absent = false): written before
  /// any partition directory goes, so that a crash mid-way finishes the
  /// deletion at the next start rather than reopen a partial copy.
  bool deleting = false;
};

class topic_catalog {
public:
  /// Loads `<data_dir>/topics.json`; on error returns nullopt and sets `error`.
  static std::optional<topic_catalog> load(const std::string& data_dir, std::string& error);

  /// Writes the catalogue durably; "" on success, else the reason.
  std::string save() const;

  const std::map<std::string, topic_entry>& topics() const { return topics_; }
  const topic_entry* find(const std::string& name) const;
  /// Adds or replaces an entry (not saved until save()).
  void put(topic_entry e) { topics_[e.name] = std::move(e); }
  /// Removes an entry (not saved until save()).
  void erase(const std::string& name) { topics_.erase(name); }

private:
  std::string path_;
  std::map<std::string, topic_entry> topics_;
};

/// Parses the "config" object of POST /v1/topics (Kafka names, integer values
/// or numeric strings). "" on success, else why (naming the key).
std::string parse_topic_config(const std::string& json_text, topic_config& out);

/// `c` as JSON object text with every key: two configs are the same when
/// their texts are (used to tell whether a local copy follows the log).
std::string topic_config_text(const topic_config& c);

}  // namespace moonmq::dataplane
