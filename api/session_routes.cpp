#include "api/session_routes.hpp"

#include <nlohmann/json.hpp>

#include "actors/ask.hpp"
#include "cluster/types.hpp"
#include "placement/load_report.hpp"
#include "api/actor_answers.hpp"

namespace moonmq::transport {
namespace {

using json = nlohmann::json;

/// The owner of each partition of `topic` (index = partition), as this
/// broker knows them; empty when the topic is not in the local catalogue.
std::vector<std::string> owners_of(const session_context& ctx, const std::string& topic) {
  std::vector<std::string> out;
  auto topics = ctx.catalog->get();
  auto t = topics->find(topic);
  if (t == topics->end())
    return out;
  auto table = ctx.owners ? ctx.owners->get() : nullptr;
  for (size_t p = 0; p < t->second.partitions.size(); ++p) {
    std::string owner = ctx.broker_id;
    if (table)
      if (auto it = table->find(cluster::topic_partition{topic, static_cast<int32_t>(p)}); it != table->end())
        owner = it->second;
    out.push_back(std::move(owner));
  }
  return out;
}

void recommend(const session_context& ctx, http_request& req, const responder& respond) {
  auto c = req.query.find("clientId");
  if (c == req.query.end() || c->second.empty()) {
    respond(http_response::error(400, "invalid_request", "clientId: required (?clientId=<your client id>)"));
    return;
  }
  if (!placement::valid_client_id(c->second)) {
    respond(http_response::error(400, "invalid_request",
                                 "clientId: expected 1..256 bytes without control characters"));
    return;
  }
  std::string topic;
  if (auto t = req.query.find("topic"); t != req.query.end()) {
    if (!cluster::valid_topic(t->second)) {
      respond(http_response::error(400, "invalid_request",
                                   "topic: expected [A-Za-z0-9._-]{1,249} without '..', got "
                                     + cluster::quote_input(t->second)));
      return;
    }
    topic = t->second;
  }
  auto owners = topic.empty() ? std::vector<std::string>{} : owners_of(ctx, topic);
  ask_many<int32_t, std::string>(
    *ctx.system, ctx.meter, ctx.timeout,
    [respond](int32_t& status, std::string& body) { respond(http_response::json(status, std::move(body))); },
    fail_with(respond), recommend_atom::value, c->second, topic, owners);
}

}  // namespace

std::string client_id_of(const http_request& req, std::string& error) {
  error.clear();
  std::string id;
  if (auto q = req.query.find("clientId"); q != req.query.end())
    id = q->second;
  else if (const auto* h = req.header("x-client-id"))
    id = *h;
  else
    return {};
  if (!placement::valid_client_id(id)) {
    error = "clientId: expected 1..256 bytes without control characters (query clientId or header X-Client-Id)";
    return {};
  }
  return id;
}

void add_session_routes(router& r, const session_context& ctx) {
  r.add("GET", "/session/recommend", [ctx](http_request& req, responder respond) { recommend(ctx, req, respond); });
}

}  // namespace moonmq::transport
