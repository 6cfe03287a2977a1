#include "api/raft_routes.hpp"

#include <nlohmann/json.hpp>

#include "actors/ask.hpp"
#include "config/dynamic.hpp"
#include "raft/messages.hpp"
#include "api/actor_answers.hpp"

namespace moonmq::transport {
namespace {

using json = nlohmann::json;

/// A topic config change's text: a JSON object (or "" = none set). Its keys
/// were checked by the proposer; a broker that forwards anything else is
/// refused here rather than committed.
bool config_object(const std::string& text) {
  return text.empty() || json::parse(text, nullptr, false).is_object();
}

/// The node, or a 503 raft_disabled answer.
const raft_actor* node_or_503(const raft_context& ctx, const responder& respond) {
  if (ctx.node)
    return &*ctx.node;
  respond(http_response::error(503, "raft_disabled", "Raft is not running on broker " + ctx.broker_id));
  return nullptr;
}

void add_message_route(router& r, const raft_context& ctx, const std::string& route) {
  r.add("POST", route, [ctx, route](http_request& req, responder respond) {
    const auto* node = node_or_503(ctx, respond);
    if (!node)
      return;
    auto m = raft::parse_message(req.body);
    if (!m) {
      respond(http_response::error(400, "invalid_request", "Raft message: " + m.err().message));
      return;
    }
    if (route != raft::route_for(*m)) {
      respond(http_response::error(400, "invalid_request",
                                   std::string("a ") + raft::type_name(*m) + " belongs on " + raft::route_for(*m)));
      return;
    }
    if (m->to.str() != ctx.broker_id) {
      respond(http_response::error(400, "invalid_request",
                                   "the message is addressed to " + m->to.str() + ", this is " + ctx.broker_id));
      return;
    }
    caf::anon_send(*node, raft_atom::value, std::move(req.body));
    respond(http_response::json(202, R"({"accepted":true})"));
  });
}

}  // namespace

void add_raft_routes(router& r, const raft_context& ctx) {
  for (const char* route : {"/cluster/raft/vote", "/cluster/raft/append", "/cluster/raft/snapshot"})
    add_message_route(r, ctx, route);

  r.add("POST", "/cluster/raft/propose", [ctx](http_request& req, responder respond) {
    const auto* node = node_or_503(ctx, respond);
    if (!node)
      return;
    auto body = json::parse(req.body, nullptr, false);
    if (body.is_object() && !body.contains("type"))
      body["type"] = "owner";  // the body before topic entries existed
    auto payload = raft::payload_from_json(body);
    if (!payload || std::holds_alternative<raft::controller_entry>(*payload)) {
      respond(http_response::error(400, "invalid_request",
                                   "body must be an owner entry {\"topic\",\"partition\",\"owner\"} or a topic entry "
                                   "{\"type\":\"topic\",\"topic\",\"partitions\",\"owner\",\"config\",\"grow\",\"delete\",\"alter\"}"
                                   + (payload ? std::string{} : ": " + payload.err().message)));
      return;
    }
    // Proposed here only: a broker that is not the leader answers 503
    // no_controller instead of forwarding again.
    auto ok = [respond](int64_t& index, int64_t& term) {
      respond(http_response::json(200, json{{"index", index}, {"term", term}}.dump()));
    };
    if (const auto* o = std::get_if<raft::owner_entry>(&*payload); o && o->expect_epoch != 0) {
      ask_many<int64_t, int64_t>(*ctx.system, *node, ctx.propose_timeout, ok, fail_with(respond), propose_atom::value,
                                 owner_atom::value, o->topic, o->partition, o->owner.str(),
                                 static_cast<int64_t>(o->expect_epoch), false, o->expect_owner_fenced);
      return;
    }
    if (const auto* o = std::get_if<raft::owner_entry>(&*payload)) {
      ask_many<int64_t, int64_t>(*ctx.system, *node, ctx.propose_timeout, ok, fail_with(respond), propose_atom::value,
                                 o->topic, o->partition, o->owner.str(), false);
      return;
    }
    if (std::holds_alternative<raft::move_entry>(*payload)) {
      ask_many<int64_t, int64_t>(*ctx.system, *node, ctx.propose_timeout, ok, fail_with(respond), propose_atom::value,
                                 move_atom::value, raft::to_json(*payload).dump(), false);
      return;
    }
    if (std::holds_alternative<raft::txn_entry>(*payload)) {
      ask_many<int64_t, int64_t>(*ctx.system, *node, ctx.propose_timeout, ok, fail_with(respond), propose_atom::value,
                                 txn_atom::value, raft::to_json(*payload).dump(), false);
      return;
    }
    if (const auto* c = std::get_if<raft::config_entry>(&*payload)) {
      if (auto why = config::check_balancer_patch(json::parse(c->balancer, nullptr, false)); !why.empty()) {
        respond(http_response::error(400, "invalid_request", "config entry: " + why));
        return;
      }
      ask_many<int64_t, int64_t>(*ctx.system, *node, ctx.propose_timeout, ok, fail_with(respond), propose_atom::value,
                                 config_atom::value, c->balancer, false);
      return;
    }
    if (const auto* b = std::get_if<raft::broker_entry>(&*payload);
        b && b->change == raft::broker_change::register_broker) {
      // A broker joining (docs/metadata.md "Joining").
      ask_many<int64_t, int64_t>(*ctx.system, *node, ctx.propose_timeout, ok, fail_with(respond), propose_atom::value,
                                 register_atom::value, b->id.str(), b->endpoints.cluster, b->endpoints.client,
                                 b->endpoints.kafka, false);
      return;
    }
    if (const auto* b = std::get_if<raft::broker_entry>(&*payload)) {
      // drain, undrain or remove (the node refuses fence / unfence: those are the leader's own).
      ask_many<int64_t, int64_t>(*ctx.system, *node, ctx.propose_timeout, ok, fail_with(respond), propose_atom::value,
                                 broker_atom::value, b->id.str(), std::string(raft::to_string(b->change)), false);
      return;
    }
    const auto& t = std::get<raft::topic_entry>(*payload);
    if (!t.owners.empty() && !t.remove && !t.alter)  // a placed create or growth, whole
      ask_many<int64_t, int64_t>(*ctx.system, *node, ctx.propose_timeout, ok, fail_with(respond), propose_atom::value,
                                 create_atom::value, raft::to_json(*payload).dump(), false);
    else if (t.remove)
      ask_many<int64_t, int64_t>(*ctx.system, *node, ctx.propose_timeout, ok, fail_with(respond), propose_atom::value,
                                 delete_atom::value, t.topic, t.partitions, t.owner.str(), false);
    else if (t.grow)
      ask_many<int64_t, int64_t>(*ctx.system, *node, ctx.propose_timeout, ok, fail_with(respond), propose_atom::value,
                                 grow_atom::value, t.topic, t.partitions, t.owner.str(), false);
    else if (t.alter && !config_object(t.config))
      respond(http_response::error(400, "invalid_request", "a topic config change carries a JSON object"));
    else if (t.alter)
      ask_many<int64_t, int64_t>(*ctx.system, *node, ctx.propose_timeout, ok, fail_with(respond), propose_atom::value,
                                 config_atom::value, t.topic, t.partitions, t.owner.str(), t.config, t.merge, false);
    else
      ask_many<int64_t, int64_t>(*ctx.system, *node, ctx.propose_timeout, ok, fail_with(respond), propose_atom::value,
                                 create_atom::value, t.topic, t.partitions, t.owner.str(), t.config, false);
  });
}

}  // namespace moonmq::transport
