#pragma once
// Changing and describing a topic's configuration with Kafka's names: the
// logic behind Kafka AlterConfigs (33), DescribeConfigs (32), CreateTopics'
// configs and PATCH /v1/topics/{t}/config (docs/metadata.md "Topic
// configuration"). A topic's config is kept as JSON object text holding only
// the keys set on the topic ("" = every key at its default), so that a
// description can tell a value set on the topic from a default, as Kafka's
// config source does (DescribeConfigs v1+: DYNAMIC_TOPIC_CONFIG vs
// DEFAULT_CONFIG). A key not set on the topic takes the cluster's default
// when the metadata log's dynamic settings set one (Kafka's dynamic
// cluster-wide broker configs log.segment.bytes, log.retention.bytes,
// log.retention.ms: DYNAMIC_DEFAULT_BROKER_CONFIG), else the built-in one.

#include <array>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "dataplane/topic_catalog.hpp"

namespace moonmq::dataplane {

/// One change: a Kafka config name and its new value as text (integers as
/// decimal text, as Kafka sends them); nullopt = back to the default.
struct topic_config_change {
  std::string name;
  std::optional<std::string> value;
};

/// One row of a description.
struct topic_config_entry {
  std::string name;
  std::string value;
  bool is_default = true;        ///< not set on the topic
  bool read_only = false;        ///< cannot be changed (cleanup.policy: only delete)
  bool cluster_default = false;  ///< not set on the topic; the value is the cluster's default
};

/// A topic key whose default a cluster can set: the topic config name, the
/// name of Kafka's broker config that defaults it, and the key of the
/// metadata log's dynamic settings that holds it (config/dynamic.hpp).
struct topic_default_key {
  const char* topic;    ///< "retention.ms"
  const char* broker;   ///< "log.retention.ms"
  const char* setting;  ///< "LogRetentionMs"
};

/// segment.bytes, retention.bytes and retention.ms, with their broker and
/// setting names (log.segment.bytes / LogSegmentBytes, ...).
const std::array<topic_default_key, 3>& topic_default_keys();

/// The defaults a topic of the metadata log starts from: the built-in ones
/// (topic_config{}) with the cluster's on top.
struct topic_defaults {
  topic_config values;
  std::set<std::string> cluster;  ///< topic keys ("retention.ms") whose default the cluster sets
};

/// The topic defaults of the dynamic settings object `settings` (its
/// LogSegmentBytes, LogRetentionBytes, LogRetentionMs). A value this build
/// cannot read, or one out of its key's range, is skipped: the built-in
/// default applies. Anything but an object gives the built-in defaults.
topic_defaults topic_defaults_of(const nlohmann::json& settings);

/// The same, from the settings' JSON object text.
topic_defaults topic_defaults_of(const std::string& settings_text);

/// Checks a value for the topic default of `key` (one of topic_default_keys,
/// by topic name), with the ranges change_topic_config applies to the topic
/// key: "" when valid, else why, naming `shown` (the name the caller was given).
std::string check_topic_default(const topic_default_key& key, const nlohmann::json& value, const std::string& shown);

/// Applies `changes` to `current` (a topic's config JSON text, "" =
/// defaults) and writes the result to `out` (JSON object text of the keys
/// set, values as integers). `replace` = Kafka AlterConfigs: the changes are
/// the whole new config and every other key returns to its default;
/// otherwise they merge into `current` (PATCH, IncrementalAlterConfigs).
/// Keys: segment.bytes (1024 ..< 2^31), retention.bytes (>= -1),
/// retention.ms (>= -1); cleanup.policy accepts only "delete" (the one
/// policy moonmq has; nothing is stored). Returns "" on success, else why,
/// naming the key ("config.retention.ms: expected an integer, got 'x'",
/// "config.foo: unknown topic config ..."); `out` is then unchanged. A name
/// given twice is refused.
std::string change_topic_config(const std::string& current, const std::vector<topic_config_change>& changes,
                                bool replace, std::string& out);

/// Every topic config moonmq knows, in name order (cleanup.policy,
/// retention.bytes, retention.ms, segment.bytes), with the values `config`
/// (JSON text as above) gives them over `defaults`. A config text that does
/// not parse is described as defaults.
std::vector<topic_config_entry> describe_topic_config(const std::string& config, const topic_defaults& defaults = {});

/// True for a key change_topic_config knows (cleanup.policy,
/// retention.bytes, retention.ms, segment.bytes).
bool is_topic_config_key(const std::string& name);

/// `changes` as a merge patch for the metadata log (JSON object text: key
/// -> integer, or null = back to the default; cleanup.policy, which stores
/// nothing, left out), each checked as change_topic_config checks it.
/// Returns "" on success, else why, naming the key.
std::string topic_config_patch(const std::vector<topic_config_change>& changes, std::string& out);

/// Reads what it can of a config text a broker did not write itself (the
/// metadata log's): every known key with a valid value; unknown keys (a
/// newer version's) and bad values are skipped and named in the answer
/// ("" when nothing was skipped). Keys the text does not set keep their
/// values of `defaults`; unreadable text reads as `defaults`.
std::string read_topic_config_lenient(const std::string& text, topic_config& out,
                                      const topic_config& defaults = {});

/// The keys of `c` that differ from the defaults, as config JSON text
/// ("" when none): what a standalone broker, which keeps whole configs,
/// describes as set on the topic.
std::string topic_config_overrides(const topic_config& c);

/// A batch of changes as one message between actors.
using topic_config_changes = std::vector<topic_config_change>;

}  // namespace moonmq::dataplane
