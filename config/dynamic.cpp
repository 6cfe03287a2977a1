#include "config/dynamic.hpp"

#include <cmath>

#include <nlohmann/json.hpp>

#include "dataplane/topic_config.hpp"

namespace moonmq::config {

using nlohmann::json;

namespace {

std::string check_names(const json& v, const std::string& key) {
  if (!v.is_array() || v.size() > 10000)
    return key + " must be an array of at most 10000 names";
  for (const auto& n : v)
    if (!n.is_string() || n.get<std::string>().empty() || n.get<std::string>().size() > 249)
      return key + " must hold non-empty strings of at most 249 characters";
  return {};
}

std::string check_int(const json& v, const std::string& key, int64_t lo, int64_t hi) {
  if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
    return key + " must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  return {};
}

std::string check_number(const json& v, const std::string& key, double lo, double hi) {
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < lo || v.get<double>() > hi)
    return key + " must be a number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  return {};
}

/// Goals: {"<NAME>": {Enabled, AvgDeviation, DetectThreshold, Priority,
/// CapacityThreshold}}, each key optional, with the ranges of
/// Autobalance.Goals (config/loader.cpp).
std::string check_goals(const json& v) {
  if (!v.is_object() || v.size() > 1000)
    return "Goals must be an object of at most 1000 goal name -> settings";
  for (auto it = v.begin(); it != v.end(); ++it) {
    auto key = "Goals." + it.key();
    if (it.key().empty() || it.key().size() > 64)
      return "Goals names goals of 1 to 64 characters";
    if (!it->is_object())
      return key + " must be an object (Enabled, AvgDeviation, DetectThreshold, Priority, CapacityThreshold)";
    for (auto g = it->begin(); g != it->end(); ++g) {
      const auto& k = g.key();
      const auto& x = g.value();
      std::string why;
      if (x.is_null())
        continue;  // no override of that key
      if (k == "Enabled")
        why = x.is_boolean() ? "" : key + ".Enabled must be true or false";
      else if (k == "AvgDeviation")
        why = check_number(x, key + "." + k, 0.0, goal_avg_deviation_max);
      else if (k == "DetectThreshold")
        why = check_number(x, key + "." + k, 0.0, 1e300);
      else if (k == "Priority")
        why = check_int(x, key + "." + k, -goal_priority_bound, goal_priority_bound);
      else if (k == "CapacityThreshold")
        why = check_number(x, key + "." + k, 0.0, 1.0);
      else
        why = "unknown goal setting " + key + "." + k
              + " (Enabled, AvgDeviation, DetectThreshold, Priority, CapacityThreshold)";
      if (!why.empty())
        return why;
    }
  }
  return {};
}

std::vector<std::string> names(const json& v) {
  std::vector<std::string> out;
  for (const auto& n : v)
    out.push_back(n.get<std::string>());
  return out;
}

}  // namespace

std::string check_balancer_patch(const json& patch) {
  if (!patch.is_object())
    return "the body must be a JSON object";
  if (patch.empty())
    return "the body names no setting";
  for (auto it = patch.begin(); it != patch.end(); ++it) {
    const auto& key = it.key();
    const auto& v = it.value();
    const dataplane::topic_default_key* topic_default = nullptr;
    for (const auto& k : dataplane::topic_default_keys())
      if (key == k.setting)
        topic_default = &k;
    if (v.is_null() && (key == "Enabled" || key == "DryRun" || key == "IntervalSeconds" || key == "MaxActionsPerDetect"
                        || key == "ExcludedTopics" || key == "ExcludedBrokers" || key == "MoveThrottleBytesPerSec"
                        || key == "Goals" || key == "NumPartitions" || key == "TopicPlacement" || topic_default))
      continue;
    std::string why;
    if (topic_default)
      why = dataplane::check_topic_default(*topic_default, v, key);
    else if (key == "Enabled" || key == "DryRun")
      why = v.is_boolean() ? "" : key + " must be true or false";
    else if (key == "IntervalSeconds")
      why = check_int(v, key, 1, 86400);
    else if (key == "MaxActionsPerDetect")
      why = check_int(v, key, 0, 100000);
    else if (key == "MoveThrottleBytesPerSec")
      why = check_int(v, key, 0, int64_t{1} << 40);
    else if (key == "ExcludedTopics" || key == "ExcludedBrokers")
      why = check_names(v, key);
    else if (key == "Goals")
      why = check_goals(v);
    else if (key == "NumPartitions")
      why = check_int(v, key, 1, max_num_partitions);
    else if (key == "TopicPlacement")
      why = v.is_string() && valid_topic_placement(v.get<std::string>())
              ? ""
              : key + " must be \"proposer\" or \"spread\"";
    else
      why = "unknown setting " + key
            + " (Enabled, DryRun, IntervalSeconds, MaxActionsPerDetect, ExcludedTopics, ExcludedBrokers, "
              "MoveThrottleBytesPerSec, Goals, NumPartitions, TopicPlacement, LogSegmentBytes, LogRetentionBytes, "
              "LogRetentionMs)";
    if (!why.empty())
      return why;
  }
  return {};
}

autobalance_config apply_balancer_settings(autobalance_config c, const json& s) {
  if (!s.is_object())
    return c;
  if (s.contains("Enabled") && s["Enabled"].is_boolean())
    c.enabled = s["Enabled"].get<bool>();
  if (s.contains("DryRun") && s["DryRun"].is_boolean())
    c.dry_run = s["DryRun"].get<bool>();
  if (s.contains("IntervalSeconds") && s["IntervalSeconds"].is_number_integer())
    c.interval_seconds = s["IntervalSeconds"].get<int>();
  if (s.contains("MaxActionsPerDetect") && s["MaxActionsPerDetect"].is_number_integer())
    c.max_actions_per_detect = s["MaxActionsPerDetect"].get<int>();
  if (s.contains("ExcludedTopics") && s["ExcludedTopics"].is_array())
    c.excluded_topics = names(s["ExcludedTopics"]);
  if (s.contains("ExcludedBrokers") && s["ExcludedBrokers"].is_array())
    c.excluded_brokers = names(s["ExcludedBrokers"]);
  // Each goal named overrides the keys it gives on top of the configured
  // goal's (a goal not configured starts from its plugin's defaults).
  if (s.contains("Goals") && s["Goals"].is_object())
    for (auto it = s["Goals"].begin(); it != s["Goals"].end(); ++it) {
      if (!it->is_object())
        continue;
      auto& g = c.goals[it.key()];
      const auto& o = *it;
      if (o.contains("Enabled") && o["Enabled"].is_boolean())
        g.enabled = o["Enabled"].get<bool>();
      if (o.contains("AvgDeviation") && o["AvgDeviation"].is_number())
        g.avg_deviation = o["AvgDeviation"].get<double>();
      if (o.contains("DetectThreshold") && o["DetectThreshold"].is_number())
        g.detect_threshold = o["DetectThreshold"].get<double>();
      if (o.contains("Priority") && o["Priority"].is_number_integer())
        g.priority = o["Priority"].get<int>();
      if (o.contains("CapacityThreshold") && o["CapacityThreshold"].is_number())
        g.capacity_threshold = o["CapacityThreshold"].get<double>();
    }
  return c;
}

int32_t num_partitions_with(int32_t configured, const json& settings) {
  if (settings.is_object())
    if (auto it = settings.find("NumPartitions"); it != settings.end() && it->is_number_integer()
                                                   && it->get<int64_t>() >= 1 && it->get<int64_t>() <= max_num_partitions)
      return static_cast<int32_t>(it->get<int64_t>());
  return configured;
}

std::string topic_placement_with(const std::string& configured, const json& settings) {
  if (settings.is_object())
    if (auto it = settings.find("TopicPlacement"); it != settings.end() && it->is_string()
                                                    && valid_topic_placement(it->get<std::string>()))
      return it->get<std::string>();
  return configured;
}

int64_t throttle_with(int64_t configured, const json& s) {
  if (s.is_object() && s.contains("MoveThrottleBytesPerSec") && s["MoveThrottleBytesPerSec"].is_number_integer())
    return s["MoveThrottleBytesPerSec"].get<int64_t>();
  return configured;
}

json effective_balancer_settings(const autobalance_config& c, int64_t throttle) {
  json goals = json::object();
  for (const auto& [name, g] : c.goals) {
    json row = json::object();
    if (g.enabled)
      row["Enabled"] = *g.enabled;
    if (g.avg_deviation)
      row["AvgDeviation"] = *g.avg_deviation;
    if (g.detect_threshold)
      row["DetectThreshold"] = *g.detect_threshold;
    if (g.priority)
      row["Priority"] = *g.priority;
    if (g.capacity_threshold)
      row["CapacityThreshold"] = *g.capacity_threshold;
    goals[name] = std::move(row);
  }
  return json{{"Enabled", c.enabled},
              {"DryRun", c.dry_run},
              {"IntervalSeconds", c.interval_seconds},
              {"MaxActionsPerDetect", c.max_actions_per_detect},
              {"ExcludedTopics", c.excluded_topics},
              {"ExcludedBrokers", c.excluded_brokers},
              {"MoveThrottleBytesPerSec", throttle},
              {"Goals", goals}};
}

}  // namespace moonmq::config
