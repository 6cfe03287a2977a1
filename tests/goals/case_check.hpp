#pragma once
// Generic checker for the balancing cases (tests/goals/cases/*.json, see
// cases/README.md): every `expect` key is checked against a plan, whatever
// produced it (the library or the moonmq-plan binary). Header-only test helper.

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "goals/builtin_goals.hpp"

namespace moonmq::test {

using json = nlohmann::json;

inline json read_json_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str());
}

/// `model` with every action of `plan` applied (owners changed).
inline json apply_plan(json model, const json& plan) {
  for (const auto& a : plan.at("actions"))
    for (auto& p : model.at("partitions"))
      if (p.at("topic") == a.at("topic") && p.at("partition") == a.at("partition")) p["owner"] = a.at("to");
  return model;
}

/// Per-broker loads of a model: id -> {nw_in, nw_out, disk, partitions}.
inline std::map<std::string, std::map<std::string, double>> broker_loads(const json& model) {
  std::map<std::string, std::map<std::string, double>> out;
  for (const auto& b : model.at("brokers"))
    out[b.at("id").get<std::string>()] = {{"nw_in", 0.0}, {"nw_out", 0.0}, {"disk", 0.0}, {"partitions", 0.0}};
  for (const auto& p : model.at("partitions")) {
    auto& l = out[p.at("owner").get<std::string>()];
    l["partitions"] += 1.0;
    if (p.contains("load"))
      for (const char* k : {"nw_in", "nw_out", "disk"})
        if (p["load"].contains(k)) l[k] += p["load"][k].get<double>();
  }
  return out;
}

/// True when `j` holds no null and only finite numbers, anywhere.
inline bool all_finite(const json& j) {
  if (j.is_null()) return false;
  if (j.is_number_float()) return std::isfinite(j.get<double>());
  if (j.is_structured())
    for (const auto& v : j)
      if (!all_finite(v)) return false;
  return true;
}

inline std::string goal_resource_key(const std::string& goal) {
  if (goal == "NW_IN") return "nw_in";
  if (goal == "NW_OUT") return "nw_out";
  if (goal == "DISK") return "disk";
  if (goal == "PARTITION_COUNT") return "partitions";
  return "";
}

inline goals::resource goal_resource(const std::string& goal) {
  if (goal == "NW_OUT") return goals::resource::nw_out;
  if (goal == "DISK") return goals::resource::disk;
  if (goal == "PARTITION_COUNT") return goals::resource::partition_count;
  return goals::resource::nw_in;
}

/// Failures (empty = all expectations hold). `replan` plans a model again.
inline std::vector<std::string> check_case(const json& model, const json& plan, const json& expect,
                                           const std::function<json(const json&)>& replan) {
  std::vector<std::string> fail;
  const auto& actions = plan.at("actions");
  const json after_model = apply_plan(model, plan);
  const auto after = broker_loads(after_model);
  auto in_list = [](const json& list, const json& v) {
    for (const auto& x : list)
      if (x == v) return true;
    return false;
  };
  // The plan's own brokers_after must agree with the plan applied to the model.
  for (const auto& [id, loads] : after)
    for (const auto& [k, v] : loads) {
      const double reported = plan.at("brokers_after").at(id).at(k).get<double>();
      if (std::fabs(reported - v) > 1e-6 * std::max(1.0, std::fabs(v)))
        fail.push_back("brokers_after." + id + "." + k + " disagrees with the applied plan");
    }
  for (auto it = expect.begin(); it != expect.end(); ++it) {
    const std::string key = it.key();
    const json& want = it.value();
    const auto n = static_cast<long long>(actions.size());
    if (key == "actions_exactly") {
      if (n != want.get<long long>()) fail.push_back(key + ": got " + std::to_string(n));
    } else if (key == "actions_at_most") {
      if (n > want.get<long long>()) fail.push_back(key + ": got " + std::to_string(n));
    } else if (key == "actions_at_least") {
      if (n < want.get<long long>()) fail.push_back(key + ": got " + std::to_string(n));
    } else if (key == "all_destinations_in") {
      for (const auto& a : actions)
        if (!in_list(want, a.at("to"))) fail.push_back(key + ": destination " + a.at("to").dump());
    } else if (key == "all_sources_in") {
      for (const auto& a : actions)
        if (!in_list(want, a.at("from"))) fail.push_back(key + ": source " + a.at("from").dump());
    } else if (key == "never_destination") {
      for (const auto& a : actions)
        if (in_list(want, a.at("to"))) fail.push_back(key + ": destination " + a.at("to").dump());
    } else if (key == "never_topic") {
      for (const auto& a : actions)
        if (in_list(want, a.at("topic"))) fail.push_back(key + ": topic " + a.at("topic").dump());
    } else if (key == "one_action_per_partition") {
      std::set<std::pair<std::string, long long>> seen;
      for (const auto& a : actions)
        if (!seen.insert({a.at("topic").get<std::string>(), a.at("partition").get<long long>()}).second)
          fail.push_back(key + ": " + a.at("topic").get<std::string>() + " twice");
    } else if (key == "goals_satisfied_after") {
      for (const auto& g : want) {
        const std::string name = g.get<std::string>();
        const std::string rk = goal_resource_key(name);
        if (rk.empty()) { fail.push_back(key + ": unknown goal " + name); continue; }
        auto cfg = goals::default_distribution_config(goal_resource(name));
        if (model.contains("goals") && model["goals"].contains(name)) {
          const auto& o = model["goals"][name];
          if (o.contains("AvgDeviation")) cfg.avg_deviation = o["AvgDeviation"].get<double>();
          if (o.contains("DetectThreshold")) cfg.detect_threshold = o["DetectThreshold"].get<double>();
        }
        double sum = 0.0;
        std::vector<std::pair<std::string, double>> eligible;
        for (const auto& b : model.at("brokers")) {
          if (!b.value("alive", true) || b.value("excluded", false)) continue;
          const std::string id = b.at("id").get<std::string>();
          eligible.emplace_back(id, after.at(id).at(rk));
          sum += after.at(id).at(rk);
        }
        if (eligible.empty()) continue;
        const double mean = sum / static_cast<double>(eligible.size());
        if (mean < cfg.detect_threshold) continue;
        const double tol = 1e-9 * std::max(1.0, mean);
        for (const auto& [id, v] : eligible)
          if (v < mean * (1 - cfg.avg_deviation) - tol || v > mean * (1 + cfg.avg_deviation) + tol)
            fail.push_back(key + ": " + name + " broker " + id + " at " + std::to_string(v) + " outside band of mean " +
                           std::to_string(mean));
      }
    } else if (key == "all_brokers_at_most_after") {
      for (auto r = want.begin(); r != want.end(); ++r)
        for (const auto& [id, loads] : after)
          if (loads.at(r.key()) > r.value().get<double>())
            fail.push_back(key + ": " + id + "." + r.key() + " = " + std::to_string(loads.at(r.key())));
    } else if (key == "no_non_finite_numbers") {
      if (want.get<bool>() && !all_finite(plan)) fail.push_back(key + ": plan holds null/NaN/inf");
    } else if (key == "replan_is_empty") {
      if (want.get<bool>()) {
        const json again = replan(after_model);
        if (!again.at("actions").empty()) fail.push_back(key + ": replan has " + std::to_string(again["actions"].size()));
      }
    } else {
      fail.push_back("unknown expectation key " + key);
    }
  }
  return fail;
}

/// The case files that exist in `dir` (names without .json).
inline std::set<std::string> case_names(const std::string& dir) {
  std::set<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".json") out.insert(e.path().stem().string());
  return out;
}

/// Every case this suite knows; a test checks the cases folder holds exactly these.
inline const std::set<std::string>& known_cases() {
  static const std::set<std::string> names{"dead-broker",      "disk-capacity",    "excluded-topic", "idle-all-zero",
                                           "idle-small-loads", "new-empty-broker", "single-broker"};
  return names;
}

inline std::string cases_dir() { return std::string(MOONMQ_SOURCE_DIR) + "/tests/goals/cases"; }

}  // namespace moonmq::test
