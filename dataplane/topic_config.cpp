#include "dataplane/topic_config.hpp"

#include <set>

#include <nlohmann/json.hpp>

namespace moonmq::dataplane {

using json = nlohmann::json;

namespace {

constexpr const char* cleanup_policy = "cleanup.policy";

/// The integer keys and their defaults (dataplane::topic_config).
bool integer_key(const std::string& name) {
  return name == "segment.bytes" || name == "retention.bytes" || name == "retention.ms";
}

json parse_object(const std::string& text) {
  if (text.empty())
    return json::object();
  auto j = json::parse(text, nullptr, false);
  return j.is_object() ? j : json::object();
}

}  // namespace

std::string change_topic_config(const std::string& current, const std::vector<topic_config_change>& changes,
                                bool replace, std::string& out) {
  json next = replace ? json::object() : parse_object(current);
  std::set<std::string> seen;
  for (const auto& c : changes) {
    if (!seen.insert(c.name).second)
      return "config." + c.name + ": given twice";
    if (c.name == cleanup_policy) {
      if (c.value && *c.value != "delete")
        return "config.cleanup.policy: only \"delete\" is supported (moonmq does not compact logs), got '" + *c.value
               + "'";
      continue;
    }
    if (!integer_key(c.name))
      return "config." + c.name
             + ": unknown topic config (known: cleanup.policy, retention.bytes, retention.ms, segment.bytes)";
    if (!c.value)
      next.erase(c.name);
    else
      next[c.name] = *c.value;
  }
  topic_config parsed;
  if (auto why = parse_topic_config(next.dump(), parsed); !why.empty())
    return why;
  // Stored as integers (parse_topic_config accepts numeric strings).
  for (auto it = next.begin(); it != next.end(); ++it)
    if (it.value().is_string())
      it.value() = std::stoll(it.value().get<std::string>());
  out = next.empty() ? std::string{} : next.dump();
  return {};
}

const std::array<topic_default_key, 3>& topic_default_keys() {
  static const std::array<topic_default_key, 3> keys{{{"segment.bytes", "log.segment.bytes", "LogSegmentBytes"},
                                                      {"retention.bytes", "log.retention.bytes", "LogRetentionBytes"},
                                                      {"retention.ms", "log.retention.ms", "LogRetentionMs"}}};
  return keys;
}

std::string check_topic_default(const topic_default_key& key, const json& value, const std::string& shown) {
  if (!value.is_number_integer())
    return shown + ": expected an integer";
  topic_config c;
  auto why = parse_topic_config(json{{key.topic, value}}.dump(), c);
  if (why.empty())
    return {};
  // "config.segment.bytes: must be at least 1024" -> "<shown>: must be at least 1024"
  auto colon = why.find(": ");
  return shown + (colon == std::string::npos ? ": " + why : why.substr(colon));
}

topic_defaults topic_defaults_of(const json& settings) {
  topic_defaults d;
  if (!settings.is_object())
    return d;
  for (const auto& k : topic_default_keys()) {
    auto it = settings.find(k.setting);
    if (it == settings.end() || !check_topic_default(k, *it, k.setting).empty())
      continue;
    (void)parse_topic_config(json{{k.topic, *it}}.dump(), d.values);
    d.cluster.insert(k.topic);
  }
  return d;
}

topic_defaults topic_defaults_of(const std::string& settings_text) {
  return topic_defaults_of(json::parse(settings_text, nullptr, false));
}

std::vector<topic_config_entry> describe_topic_config(const std::string& config, const topic_defaults& defaults) {
  topic_config c = defaults.values;
  json set = parse_object(config);
  if (!parse_topic_config(set.dump(), c).empty()) {
    c = defaults.values;
    set = json::object();
  }
  auto row = [&](const char* name, int64_t v) {
    bool inherited = !set.contains(name) || set[name].is_null();
    return topic_config_entry{name, std::to_string(v), inherited, false,
                              inherited && defaults.cluster.count(name) != 0};
  };
  return {topic_config_entry{cleanup_policy, "delete", true, true}, row("retention.bytes", c.retention_bytes),
          row("retention.ms", c.retention_ms), row("segment.bytes", c.segment_bytes)};
}

bool is_topic_config_key(const std::string& name) { return name == cleanup_policy || integer_key(name); }

std::string topic_config_patch(const std::vector<topic_config_change>& changes, std::string& out) {
  std::string merged;
  if (auto why = change_topic_config("", changes, false, merged); !why.empty())
    return why;
  json patch = json::object();
  for (const auto& c : changes)
    if (c.name != cleanup_policy)
      patch[c.name] = c.value ? json(std::stoll(*c.value)) : json(nullptr);
  out = patch.dump();
  return {};
}

std::string read_topic_config_lenient(const std::string& text, topic_config& out, const topic_config& defaults) {
  out = defaults;
  if (text.empty())
    return {};
  auto j = json::parse(text, nullptr, false);
  if (!j.is_object())
    return "the whole text (not a JSON object)";
  std::string skipped;
  for (auto it = j.begin(); it != j.end(); ++it) {
    topic_config one = out;
    if (!integer_key(it.key()) || !parse_topic_config(json{{it.key(), it.value()}}.dump(), one).empty()) {
      skipped += (skipped.empty() ? "" : ", ") + it.key();
      continue;
    }
    out = one;
  }
  return skipped;
}

std::string topic_config_overrides(const topic_config& c) {
  const topic_config d;
  json j = json::object();
  if (c.segment_bytes != d.segment_bytes)
    j["segment.bytes"] = c.segment_bytes;
  if (c.retention_bytes != d.retention_bytes)
    j["retention.bytes"] = c.retention_bytes;
  if (c.retention_ms != d.retention_ms)
    j["retention.ms"] = c.retention_ms;
  return j.empty() ? std::string{} : j.dump();
}

}  // namespace moonmq::dataplane
