#pragma once
// JSON conversion of the model and the plan, exactly as CONTRACT §6.
// Model extensions accepted (optional): "cooldown": [{"topic","partition"}],
// "in_flight": [{"topic","partition","to"}], "avoid":
// [{"topic","partition","broker"}] (a model without them plans as before).
// Plan extensions: goals[].basis, goals[].hard, goals[].priority,
// goals[].cost_before, goals[].cost_after, "summary", "moves_lower_bound"
// and "moves_to_lower_bound" (docs/balancer.md "Detector").

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "goals/detector.hpp"
#include "goals/model.hpp"
#include "goals/outcome.hpp"

namespace moonmq::goals {

/// Parses a model object. Errors name the key path and the problem, e.g.
/// "partitions[2].load.nw_in: expected a number >= 0"; unknown owners and
/// duplicates are reported by validate() (called here too).
outcome<cluster_model> model_from_json(const nlohmann::json& j);
/// Bytes past the end of its text that model_from_text may read when the
/// caller has them (simdjson's SIMDJSON_PADDING).
inline constexpr std::size_t kModelTextPadding = 64;
/// Reads a model from JSON text: the same models and the same errors as
/// model_from_json(nlohmann::json::parse(text)); syntax errors are
/// "malformed JSON: " + nlohmann's message (with the byte position).
/// The partitions array is read with simdjson On-Demand, the other fields
/// with nlohmann. The whole text is read again with nlohmann on any error,
/// a -0, a duplicate or escaped known key inside a partition, or a second
/// "partitions" (goals/model_text.cpp; docs/balancer.md "Reading a model
/// file"). `readable_after`: how many bytes after text.end() belong to the
/// caller's buffer and may be read (their content does not matter); with
/// fewer than kModelTextPadding the text is first copied into a padded
/// buffer (one more copy of its size in memory).
outcome<cluster_model> model_from_text(std::string_view text, std::size_t readable_after = 0);
/// The model as CONTRACT §6 JSON (round-trips through model_from_json).
nlohmann::json model_to_json(const cluster_model& m);
/// The plan as CONTRACT §6 JSON; every number is finite.
nlohmann::json plan_to_json(const plan& p);

/// The plan's moves as a reassignment `moonmqctl reassign execute` and
/// POST /admin/reassignments take (CONTRACT §4):
/// {"version":1,"partitions":[{"topic","partition","replicas":["<to>"]}]},
/// one entry per partition the plan moves (each half of a SWAP is a move;
/// a partition moved more than once goes to its last destination, and one
/// moved away and back has none), in the order of the actions.
nlohmann::json plan_to_reassignment(const plan& p);

}  // namespace moonmq::goals
