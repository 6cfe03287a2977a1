#include "api/actor_answers.hpp"

#include <nlohmann/json.hpp>

#include "actors/errors.hpp"

namespace moonmq::transport {

http_response error_response(const caf::error& e) {
  auto msg = message_of(e);
  nlohmann::json j{{"error", error_code_of(e)}, {"message", msg.empty() ? caf::to_string(e) : msg}};
  int64_t lo = 0, hi = 0;
  if (out_of_range_bounds(e, lo, hi)) {
    j["log_start_offset"] = lo;
    j["log_end_offset"] = hi;
  }
  if (mismatch_log_end(e, hi))
    j["log_end_offset"] = hi;
  return http_response::json(http_status_of(e), j.dump());
}

std::function<void(const caf::error&)> fail_with(const responder& respond) {
  return [respond](const caf::error& e) { respond(error_response(e)); };
}

std::optional<std::pair<int32_t, partition_actor>> route_partition(const catalog_view& catalog, http_request& req,
                                                                   const responder& respond) {
  auto topics = catalog.get();
  auto t = topics->find(req.params["topic"]);
  const auto& raw = req.params["partition"];
  if (t == topics->end() || raw.empty() || raw.size() > 9 || raw.find_first_not_of("0123456789") != std::string::npos
      || std::stoul(raw) >= t->second.partitions.size()) {
    respond(http_response::error(404, "unknown_partition", "no local partition " + req.params["topic"] + "/" + raw));
    return std::nullopt;
  }
  auto n = std::stoul(raw);
  return std::make_pair(static_cast<int32_t>(n), t->second.partitions[n]);
}

}  // namespace moonmq::transport
