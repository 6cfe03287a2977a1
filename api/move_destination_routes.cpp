// The routes of the destination half of a partition move (docs/cluster.md
// "How a move runs"): the requests a move's source sends the destination
// broker to prepare, fill, confirm or clean up its copy, and to merge the
// group offsets it pushes. Each decodes the request, checks the controller
// fence, asks the move destination actor (actors/move_destination.hpp) and
// encodes its answer. The operator's routes and the broker-to-broker move
// requests are in move_routes.cpp.

#include <optional>

#include <nlohmann/json.hpp>

#include "actors/ask.hpp"
#include "actors/move_destination.hpp"
#include "api/actor_answers.hpp"
#include "api/cluster_routes.hpp"
#include "api/move_routes_impl.hpp"

namespace moonmq::transport::move_detail {
namespace {

/// How long a route waits for the destination's answer: a confirm is up to
/// four local requests (fsync, log start, owner entry, unseal), each
/// bounded by the actor at `ctx.timeout`; an ensure that creates many
/// partitions may take longer, and then carries on after the route
/// answered 504 (its source has given up at PeerTimeout anyway: its
/// request to this broker has that deadline).
std::chrono::milliseconds step_timeout(const move_context& ctx) { return 4 * ctx.timeout; }

/// The message `parse` (a *_from_json of cluster/move_messages.hpp) reads
/// from the JSON object body; answers 400 invalid_request naming the shape
/// otherwise.
template <class T, class Parse>
std::optional<T> read_message(const http_request& req, const responder& respond, Parse parse) {
  json body;
  if (!object_body(req, respond, body))
    return std::nullopt;
  auto m = parse(body);
  if (!m) {
    respond(http_response::error(400, "invalid_request", m.err().message));
    return std::nullopt;
  }
  return std::move(*m);
}

/// Answers the destination's move_answer (or its error) on `respond`.
template <class... Ts>
void ask_destination(const move_context& ctx, const responder& respond, Ts&&... request) {
  ask<cluster::move_answer>(
    *ctx.system, ctx.destination, step_timeout(ctx),
    [respond](cluster::move_answer& a) { respond(http_response::json(200, cluster::to_json(a).dump())); },
    fail_with(respond), std::forward<Ts>(request)...);
}

/// Step 1: POST /cluster/partitions/{topic}/{partition}/ensure.
void ensure(const move_context& ctx, http_request& req, const responder& respond) {
  json body;
  if (!object_body(req, respond, body))
    return;
  auto topic = req.params["topic"];
  const auto& raw = req.params["partition"];
  if (raw.empty() || raw.size() > 9 || raw.find_first_not_of("0123456789") != std::string::npos) {
    respond(http_response::error(400, "invalid_request", "the partition must be a number"));
    return;
  }
  auto partition = static_cast<int32_t>(std::stol(raw));
  auto ensure = cluster::move_ensure_from_json(body, partition);
  if (!ensure) {
    respond(http_response::error(400, "invalid_request", ensure.err().message));
    return;
  }
  with_fence(*ctx.system, ctx.state, ctx.timeout, req, respond,
             [ctx, respond, topic, partition, e = std::move(*ensure)](int64_t at, const std::string&) {
               ask_destination(ctx, respond, ensure_atom::value, topic, partition, e, at);
             });
}

/// Steps 2 and 4: POST /cluster/partitions/{topic}/{partition}/append
/// ?expected_offset=N[&sync=true], the body the source's batches.
void append(const move_context& ctx, http_request& req, const responder& respond) {
  auto local = route_partition(*ctx.catalog, req, respond);
  if (!local)
    return;
  auto e = req.query.find("expected_offset");
  if (e == req.query.end() || e->second.empty() || e->second.size() > 18
      || e->second.find_first_not_of("0123456789") != std::string::npos) {
    respond(http_response::error(400, "invalid_request", "expected_offset must be a non-negative integer"));
    return;
  }
  auto expected = static_cast<int64_t>(std::stoll(e->second));
  bool sync = req.query.count("sync") && req.query["sync"] == "true";
  ask_destination(ctx, respond, copy_atom::value, req.params["topic"], local->first, expected, std::move(req.body),
                  sync);
}

/// Step 5: POST /cluster/offsets.
void merge_offsets(const move_context& ctx, http_request& req, const responder& respond) {
  auto pushed = read_message<cluster::move_offsets>(req, respond, cluster::move_offsets_from_json);
  if (!pushed)
    return;
  with_fence(*ctx.system, ctx.state, ctx.timeout, req, respond,
             [ctx, respond, p = std::move(*pushed)](int64_t, const std::string&) {
               ask<int32_t>(
                 *ctx.system, ctx.destination, step_timeout(ctx),
                 [respond](int32_t& merged) { respond(http_response::json(200, json{{"merged", merged}}.dump())); },
                 fail_with(respond), merge_atom::value, p);
             });
}

/// Step 6: POST /cluster/partitions/{topic}/{partition}/confirm.
void confirm(const move_context& ctx, http_request& req, const responder& respond) {
  auto local = route_partition(*ctx.catalog, req, respond);
  if (!local)
    return;
  auto confirmed = read_message<cluster::move_confirm>(req, respond, cluster::move_confirm_from_json);
  if (!confirmed)
    return;
  with_fence(*ctx.system, ctx.state, ctx.timeout, req, respond,
             [ctx, respond, topic = req.params["topic"], partition = local->first,
              c = std::move(*confirmed)](int64_t at, const std::string&) {
               ask_destination(ctx, respond, confirm_atom::value, topic, partition, c, at);
             });
}

/// A failed or cancelled move: POST /cluster/partitions/{topic}/{partition}/cleanup.
void cleanup(const move_context& ctx, http_request& req, const responder& respond) {
  auto local = route_partition(*ctx.catalog, req, respond);
  if (!local)
    return;
  auto m = read_message<cluster::move_cleanup>(req, respond, cluster::move_cleanup_from_json);
  if (!m)
    return;
  with_fence(*ctx.system, ctx.state, ctx.timeout, req, respond,
             [ctx, respond, topic = req.params["topic"], partition = local->first, m = *m](int64_t at,
                                                                                       const std::string&) {
               ask_destination(ctx, respond, cleanup_atom::value, topic, partition, m, at);
             });
}

}  // namespace

void add_move_destination_routes(router& r, const move_context& ctx) {
  r.add("POST", "/cluster/partitions/{topic}/{partition}/ensure",
        [ctx](http_request& req, responder respond) { ensure(ctx, req, respond); });
  r.add("POST", "/cluster/partitions/{topic}/{partition}/append",
        [ctx](http_request& req, responder respond) { append(ctx, req, respond); });
  r.add("POST", "/cluster/partitions/{topic}/{partition}/confirm",
        [ctx](http_request& req, responder respond) { confirm(ctx, req, respond); });
  r.add("POST", "/cluster/partitions/{topic}/{partition}/cleanup",
        [ctx](http_request& req, responder respond) { cleanup(ctx, req, respond); });
  r.add("POST", "/cluster/offsets", [ctx](http_request& req, responder respond) { merge_offsets(ctx, req, respond); });
}

}  // namespace moonmq::transport::move_detail
