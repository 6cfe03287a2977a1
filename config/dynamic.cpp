#include "config/dynamic.hpp"

#include <nlohmann/json.hpp>

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
    if (v.is_null() && (key == "Enabled" || key == "DryRun" || key == "IntervalSeconds" || key == "MaxActionsPerDetect"
                        || key == "ExcludedTopics" || key == "ExcludedBrokers" || key == "MoveThrottleBytesPerSec"))
      continue;
    std::string why;
    if (key == "Enabled" || key == "DryRun")
      why = v.is_boolean() ? "" : key + " must be true or false";
    else if (key == "IntervalSeconds")
      why = check_int(v, key, 1, 86400);
    else if (key == "MaxActionsPerDetect")
      why = check_int(v, key, 0, 100000);
    else if (key == "MoveThrottleBytesPerSec")
      why = check_int(v, key, 0, int64_t{1} << 40);
    else if (key == "ExcludedTopics" || key == "ExcludedBrokers")
      why = check_names(v, key);
    else
      why = "unknown setting " + key
            + " (Enabled, DryRun, IntervalSeconds, MaxActionsPerDetect, ExcludedTopics, ExcludedBrokers, "
              "MoveThrottleBytesPerSec)";
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
  return c;
}

int64_t throttle_with(int64_t configured, const json& s) {
  if (s.is_object() && s.contains("MoveThrottleBytesPerSec") && s["MoveThrottleBytesPerSec"].is_number_integer())
    return s["MoveThrottleBytesPerSec"].get<int64_t>();
  return configured;
}

json effective_balancer_settings(const autobalance_config& c, int64_t throttle) {
  return json{{"Enabled", c.enabled},
              {"DryRun", c.dry_run},
              {"IntervalSeconds", c.interval_seconds},
              {"MaxActionsPerDetect", c.max_actions_per_detect},
              {"ExcludedTopics", c.excluded_topics},
              {"ExcludedBrokers", c.excluded_brokers},
              {"MoveThrottleBytesPerSec", throttle}};
}

}  // namespace moonmq::config
