#pragma once
// JSON conversion of the model and the plan, exactly as CONTRACT §6.
// Model extensions accepted (optional): "cooldown": [{"topic","partition"}],
// "in_flight": [{"topic","partition","to"}], "avoid":
// [{"topic","partition","broker"}] (a model without them plans as before).
// Plan extensions: goals[].basis, goals[].hard, goals[].priority,
// goals[].cost_before, goals[].cost_after, "summary", "moves_lower_bound"
// and "moves_to_lower_bound" (docs/balancer.md "Detector").

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
/// Parses JSON text then model_from_json; syntax errors give the byte position.
outcome<cluster_model> model_from_text(std::string_view text);
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
