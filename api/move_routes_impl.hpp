#pragma once
// Private to the move routes (move_routes.cpp, move_destination_routes.cpp):
// what both halves read a request with.

#include <functional>

#include <nlohmann/json.hpp>

#include "api/move_routes.hpp"

namespace moonmq::transport::move_detail {

using json = nlohmann::json;
using fail_fn = std::function<void(const caf::error&)>;

/// Parses a JSON object body; answers 400 and returns false otherwise.
inline bool object_body(const http_request& req, const responder& respond, json& out) {
  out = json::parse(req.body, nullptr, false);
  if (out.is_object())
    return true;
  respond(http_response::error(400, "invalid_request", "body must be a JSON object"));
  return false;
}

inline bool is_int(const json& j, const char* key) { return j.contains(key) && j[key].is_number_integer(); }
inline bool is_str(const json& j, const char* key) { return j.contains(key) && j[key].is_string(); }

/// The destination half of a move (steps 1, 2, 5 and 6 of docs/cluster.md
/// "How a move runs"): POST /cluster/partitions/{t}/{p}/ensure, append,
/// confirm, cleanup, and POST /cluster/offsets.
void add_move_destination_routes(router& r, const move_context& ctx);

}  // namespace moonmq::transport::move_detail
