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

/// Where read_model_fields takes the partitions from.
enum class partitions_source {
  json,          ///< `j["partitions"]` (model_from_json)
  already_read,  ///< m.replicas, read by the caller (model_from_text)
};
/// Reads brokers, then (from `partitions`) the partitions, then the
/// extensions of `j` into m, then validate(m): the model, or the first
/// error, in the order model_from_json finds them.
outcome<cluster_model> read_model_fields(const nlohmann::json& j, cluster_model m, partitions_source partitions);
/// The reference reader: nlohmann::json::parse of the whole text, then
/// model_from_json. Syntax errors are "malformed JSON: " + nlohmann's
/// message (with the byte position).
outcome<cluster_model> model_from_dom_text(std::string_view text);

}  // namespace moonmq::goals::detail
