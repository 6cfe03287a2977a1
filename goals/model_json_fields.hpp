#pragma once
// Internal to moonmq_goals: the parts of the model reader that
// model_json.cpp (nlohmann DOM) and model_text.cpp (simdjson On-Demand)
// share, so that both accept the same models with the same errors.

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "goals/model.hpp"
#include "goals/outcome.hpp"

namespace moonmq::goals::detail {

/// Reads `j["brokers"]` into m.brokers; "" or the first error, worded as
/// model_from_json words it ("brokers[1].alive: expected true or false").
std::string read_brokers(const nlohmann::json& j, cluster_model& m);
/// Reads `j["partitions"]` into m.replicas; "" or the first error.
std::string read_partitions(const nlohmann::json& j, cluster_model& m);
/// Reads the optional top-level fields (excluded_topics, goals, max_actions,
/// cooldown, in_flight, avoid) into m; "" or the first error.
std::string read_extensions(const nlohmann::json& j, cluster_model& m);
/// The reference reader: nlohmann::json::parse of the whole text, then
/// model_from_json. Syntax errors are "malformed JSON: " + nlohmann's
/// message (with the byte position).
outcome<cluster_model> model_from_dom_text(std::string_view text);

}  // namespace moonmq::goals::detail
