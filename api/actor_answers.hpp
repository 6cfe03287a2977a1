#pragma once
// Pieces every HTTP ↔ actor bridge shares: an actor's error as the JSON
// error answer of CONTRACT §3, and the local partition a route's
// {topic}/{partition} names.

#include <cstdint>
#include <functional>
#include <optional>
#include <utility>

#include <caf/fwd.hpp>

#include "actors/catalog_view.hpp"
#include "net/http_types.hpp"
#include "net/router.hpp"

namespace moonmq::transport {

/// `{"error","message"}` with the error's HTTP status (actors/errors.hpp);
/// offset_out_of_range also carries "log_start_offset" and "log_end_offset",
/// offset_mismatch "log_end_offset".
http_response error_response(const caf::error& e);

/// A failure callback answering error_response(e) on `respond`.
std::function<void(const caf::error&)> fail_with(const responder& respond);

/// The partition named by the route's {topic} and {partition} when this
/// broker holds it: (number, actor). Answers 404 unknown_partition and
/// returns nullopt otherwise (unknown topic, not a decimal number, beyond
/// the topic's partitions).
std::optional<std::pair<int32_t, partition_actor>> route_partition(const catalog_view& catalog, http_request& req,
                                                                   const responder& respond);

}  // namespace moonmq::transport
