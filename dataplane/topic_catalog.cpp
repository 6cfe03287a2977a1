#include "dataplane/topic_catalog.hpp"

#include <cerrno>

#include <nlohmann/json.hpp>

#include "dataplane/topic_name.hpp"
#include "util/atomic_file.hpp"

namespace moonmq::dataplane {

using json = nlohmann::json;

namespace {

json to_json(const topic_config& c) {
  return json{{"segment.bytes", c.segment_bytes}, {"retention.bytes", c.retention_bytes},
              {"retention.ms", c.retention_ms}};
}

/// Reads one integer config value given as a number or a numeric string.
std::string read_value(const json& obj, const char* key, int64_t& out, int64_t min) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null())
    return {};
  int64_t v = 0;
  if (it->is_number_integer()) {
    v = it->get<int64_t>();
  } else if (it->is_string()) {
    const auto& s = it->get_ref<const std::string&>();
    size_t used = 0;
    try {
      v = std::stoll(s, &used);
    } catch (...) {
      used = 0;
    }
    if (used == 0 || used != s.size())
      return std::string("config.") + key + ": expected an integer, got '" + s + "'";
  } else {
    return std::string("config.") + key + ": expected an integer";
  }
  if (v < min)
    return std::string("config.") + key + ": must be at least " + std::to_string(min);
  out = v;
  return {};
}

std::string from_json(const json& obj, topic_config& c) {
  if (!obj.is_object())
    return "config: expected an object";
  for (auto it = obj.begin(); it != obj.end(); ++it)
    if (it.key() != "segment.bytes" && it.key() != "retention.bytes" && it.key() != "retention.ms")
      return "config." + it.key() + ": unknown topic config (known: segment.bytes, retention.bytes, retention.ms)";
  if (auto e = read_value(obj, "segment.bytes", c.segment_bytes, 1024); !e.empty())
    return e;
  if (c.segment_bytes > (1LL << 31) - 1)
    return "config.segment.bytes: must be below 2 GiB";
  if (auto e = read_value(obj, "retention.bytes", c.retention_bytes, -1); !e.empty())
    return e;
  return read_value(obj, "retention.ms", c.retention_ms, -1);
}

}  // namespace

std::string parse_topic_config(const std::string& json_text, topic_config& out) {
  auto j = json::parse(json_text, nullptr, false);
  if (j.is_discarded())
    return "config: malformed JSON";
  return from_json(j, out);
}

std::string topic_config_text(const topic_config& c) { return to_json(c).dump(); }

std::optional<topic_catalog> topic_catalog::load(const std::string& data_dir, std::string& error) {
  topic_catalog cat;
  cat.path_ = data_dir + "/topics.json";
  std::string text;
  if (auto ec = util::read_file(cat.path_, text)) {
    if (ec.value() == ENOENT)
      return cat;
    error = cat.path_ + ": " + ec.message();
    return std::nullopt;
  }
  auto j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("topics") || !j["topics"].is_array()) {
    error = cat.path_ + ": malformed topic catalogue (expected {\"topics\":[...]})";
    return std::nullopt;
  }
  for (const auto& t : j["topics"]) {
    topic_entry e;
    if (!t.is_object() || !t.contains("name") || !t["name"].is_string() || !t.contains("partitions")
        || !t["partitions"].is_number_integer()) {
      error = cat.path_ + ": malformed topic entry " + t.dump();
      return std::nullopt;
    }
    e.name = t["name"].get<std::string>();
    e.partitions = t["partitions"].get<int32_t>();
    if (!check_topic_name(e.name).empty() || e.partitions < 1 || e.partitions > max_partitions) {
      error = cat.path_ + ": invalid topic entry " + t.dump();
      return std::nullopt;
    }
    if (t.contains("config")) {
      if (auto why = from_json(t["config"], e.config); !why.empty()) {
        error = cat.path_ + ": topic " + e.name + ": " + why;
        return std::nullopt;
      }
    }
    if (t.contains("created_at")) {
      if (!t["created_at"].is_number_integer() || t["created_at"].get<int64_t>() < 0) {
        error = cat.path_ + ": topic " + e.name + ": created_at must be a log index (integer >= 0)";
        return std::nullopt;
      }
      e.created_at = t["created_at"].get<int64_t>();
    }
    if (t.contains("deleting")) {
      if (!t["deleting"].is_boolean()) {
        error = cat.path_ + ": topic " + e.name + ": deleting must be true or false";
        return std::nullopt;
      }
      e.deleting = t["deleting"].get<bool>();
    }
    cat.topics_[e.name] = std::move(e);
  }
  return cat;
}

std::string topic_catalog::save() const {
  json list = json::array();
  for (const auto& [name, e] : topics_) {
    json row{{"name", name}, {"partitions", e.partitions}, {"config", to_json(e.config)}};
    if (e.created_at != 0)
      row["created_at"] = e.created_at;
    if (e.deleting)
      row["deleting"] = true;
    list.push_back(std::move(row));
  }
  if (auto ec = util::write_file_atomic(path_, json{{"topics", list}}.dump(1)))
    return path_ + ": " + ec.message();
  return {};
}

const topic_entry* topic_catalog::find(const std::string& name) const {
  auto it = topics_.find(name);
  return it == topics_.end() ? nullptr : &it->second;
}

}  // namespace moonmq::dataplane
