// GET /v1/topics/{topic} and PATCH /v1/topics/{topic}/config (docs/client-api.md
// "Topic administration"): a topic's partitions with their owners and
// bounds, and its config, described and changed with Kafka's names. The
// config rules are dataplane/topic_config.hpp's; a change goes through the
// metadata log in a cluster (an `alter` topic entry, docs/metadata.md
// "Topic configuration"), to this broker's broker actor without one.

#include <mutex>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/ask.hpp"
#include "actors/errors.hpp"
#include "dataplane/topic_config.hpp"
#include "transport/actor_answers.hpp"
#include "transport/client_routes.hpp"
#include "transport/http_client.hpp"

namespace moonmq::transport {
namespace {

using json = nlohmann::json;

/// The topic's config text as the metadata log holds it (keys set on the
/// topic), or a standalone broker's keys that differ from the defaults.
std::string config_of(const client_context& ctx, const std::string& topic) {
  if (ctx.owners && ctx.metadata) {
    auto image = ctx.owners->topics();
    if (auto it = image->find(topic); it != image->end())
      return it->second.config;
  }
  auto local = ctx.catalog->get();
  auto it = local->find(topic);
  return it == local->end() ? std::string{} : dataplane::topic_config_overrides(it->second.config);
}

json describe_config(const std::string& text) {
  json rows = json::array();
  for (const auto& r : dataplane::describe_topic_config(text))
    rows.push_back({{"name", r.name}, {"value", r.value}, {"default", r.is_default}, {"read_only", r.read_only}});
  return rows;
}

/// One answer in the making: a row per partition, filled from any thread.
struct describe_round {
  std::mutex mtx;
  json rows;
  size_t left = 0;
  std::function<void()> finish;
  void set(size_t p, json fields) {
    std::unique_lock<std::mutex> lock{mtx};
    for (auto it = fields.begin(); it != fields.end(); ++it)
      rows[p][it.key()] = it.value();
    if (--left != 0)
      return;
    lock.unlock();
    auto f = std::move(finish);
    f();
  }
};

/// The bounds of local partition `p` into `round`.
void local_bounds(const client_context& ctx, std::shared_ptr<describe_round> round, size_t p, partition_actor actor) {
  ctx.system->spawn(
    [round, p](caf::event_based_actor* self, partition_actor a, std::chrono::milliseconds timeout) {
      self->request(a, timeout, bounds_atom::value)
        .then(
          [round, p](int64_t lo, int64_t hi, int64_t size) {
            round->set(p, {{"log_start_offset", lo}, {"log_end_offset", hi}, {"size_bytes", size}});
          },
          [round, p](caf::error& e) { round->set(p, {{"error", error_code_of(e)}}); });
    },
    std::move(actor), ctx.timeout);
}

/// The bounds of partition `p` from its owner (GET
/// /cluster/partitions/{t}/{p}/log-end) into `round`.
void peer_bounds(const client_context& ctx, std::shared_ptr<describe_round> round, size_t p,
                 const std::string& topic, const std::string& owner) {
  auto peer = ctx.peers->find(owner);
  if (!peer || !peer->client) {
    round->set(p, {{"error", "owner_unreachable"}});
    return;
  }
  http_client_request req;
  req.method = "GET";
  req.target = "/cluster/partitions/" + topic + "/" + std::to_string(p) + "/log-end";
  if (!peer->token.empty())
    req.headers.emplace_back("X-Cluster-Token", peer->token);
  req.timeout = ctx.timeout;
  peer->client->request(std::move(req), [round, p](http_client_result res) {
    auto body = res.ok() && res.status == 200 ? json::parse(res.body, nullptr, false) : json{};
    if (!body.is_object() || !body.contains("log_end_offset")) {
      round->set(p, {{"error", "owner_unreachable"}});
      return;
    }
    round->set(p, {{"log_start_offset", body["log_start_offset"]},
                   {"log_end_offset", body["log_end_offset"]},
                   {"size_bytes", body["size_bytes"]}});
  });
}

void describe_topic(const client_context& ctx, http_request& req, const responder& respond) {
  auto name = req.params["topic"];
  auto count = partition_count(ctx, name);
  if (!count) {
    respond(http_response::error(404, "unknown_topic", "unknown topic " + name));
    return;
  }
  auto round = std::make_shared<describe_round>();
  round->rows = json::array();
  round->left = static_cast<size_t>(*count);
  auto config = describe_config(config_of(ctx, name));
  round->finish = [round, respond, name, config] {
    int64_t size = 0;
    for (const auto& row : round->rows)
      size += row.value("size_bytes", int64_t{0});
    respond(http_response::json(
      200, json{{"name", name}, {"partitions", round->rows}, {"size_bytes", size}, {"config", config}}.dump()));
  };
  if (*count == 0) {
    round->finish();
    return;
  }
  // Owners first, every row complete before the first bounds request
  // goes out (the answers fill the rows from other threads).
  std::vector<std::optional<std::string>> owners(static_cast<size_t>(*count), ctx.broker_id);
  if (ctx.owners) {
    auto image = ctx.owners->get();
    for (int32_t p = 0; p < *count; ++p) {
      auto it = image->find(cluster::topic_partition{name, p});
      owners[static_cast<size_t>(p)] = it == image->end() ? std::nullopt : std::optional<std::string>{it->second};
    }
  }
  for (int32_t p = 0; p < *count; ++p) {
    const auto& owner = owners[static_cast<size_t>(p)];
    round->rows.push_back({{"partition", p}, {"owner", owner ? json(*owner) : json(nullptr)}});
  }
  auto local = ctx.catalog->get();
  auto copy = local->find(name);
  for (size_t p = 0; p < owners.size(); ++p) {
    const auto& owner = owners[p];
    if (!owner)
      round->set(p, {{"error", "partition_offline"}});
    else if (*owner != ctx.broker_id)
      peer_bounds(ctx, round, p, name, *owner);
    else if (copy != local->end() && p < copy->second.partitions.size())
      local_bounds(ctx, round, p, copy->second.partitions[p]);
    else
      round->set(p, {{"error", "partition_offline"}});
  }
}

/// PATCH body: {"<key>": value | null, ...}, merged into the topic's
/// config (null = back to the default).
void change_config(const client_context& ctx, http_request& req, const responder& respond) {
  auto body = json::parse(req.body, nullptr, false);
  if (body.is_discarded() || !body.is_object()) {
    respond(http_response::error(400, "invalid_request",
                                 "body must be a JSON object of topic configs, e.g. {\"retention.ms\":86400000}"));
    return;
  }
  dataplane::topic_config_changes changes;
  for (auto it = body.begin(); it != body.end(); ++it) {
    const auto& v = it.value();
    if (v.is_null())
      changes.push_back({it.key(), std::nullopt});
    else if (v.is_string())
      changes.push_back({it.key(), v.get<std::string>()});
    else if (v.is_number_integer())
      changes.push_back({it.key(), std::to_string(v.get<int64_t>())});
    else {
      respond(http_response::error(400, "invalid_request",
                                   "config." + it.key() + ": expected an integer, a string or null"));
      return;
    }
  }
  auto name = req.params["topic"];
  auto ok = [respond, name](std::string& text) {
    respond(http_response::json(
      200, json{{"name", name}, {"config", text.empty() ? json::object() : json::parse(text)},
                {"configs", describe_config(text)}}
             .dump()));
  };
  if (ctx.metadata)
    ask<std::string>(*ctx.system, *ctx.metadata, ctx.timeout, ok, fail_with(respond), config_atom::value, name,
                     std::move(changes), false);
  else
    ask<std::string>(*ctx.system, ctx.broker, ctx.timeout, ok, fail_with(respond), config_atom::value, name,
                     std::move(changes), false);
}

}  // namespace

void add_topic_routes(router& r, const client_context& ctx) {
  r.add("GET", "/v1/topics/{topic}", [ctx](http_request& req, responder respond) { describe_topic(ctx, req, respond); });
  r.add("PATCH", "/v1/topics/{topic}/config",
        [ctx](http_request& req, responder respond) { change_config(ctx, req, respond); });
}

}  // namespace moonmq::transport
