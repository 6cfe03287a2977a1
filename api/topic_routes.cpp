// GET /v1/topics/{topic}, PATCH /v1/topics/{topic}/config and POST
// /v1/topics/{topic}/partitions/{p}/delete-records (docs/client-api.md
// "Topic administration"): a topic's partitions with their owners and
// bounds, its config, described and changed with Kafka's names, and
// Kafka's DeleteRecords. The
// config rules are dataplane/topic_config.hpp's; a change goes through the
// metadata log in a cluster (an `alter` topic entry, docs/metadata.md
// "Topic configuration"), to this broker's broker actor without one.

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/ask.hpp"
#include "actors/errors.hpp"
#include "dataplane/topic_config.hpp"
#include "api/actor_answers.hpp"
#include "api/client_routes.hpp"
#include "api/partition_bounds.hpp"

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

/// The cluster's topic defaults (none on a standalone broker).
dataplane::topic_defaults defaults_of(const client_context& ctx) {
  return ctx.owners && ctx.metadata ? ctx.owners->topic_defaults() : dataplane::topic_defaults{};
}

/// The config rows: "default" true when the topic does not set the key,
/// "source" where the value comes from ("topic", "cluster": the cluster's
/// dynamic default, "default": built in).
json describe_config(const dataplane::topic_defaults& defaults, const std::string& text) {
  json rows = json::array();
  for (const auto& r : dataplane::describe_topic_config(text, defaults))
    rows.push_back({{"name", r.name},
                    {"value", r.value},
                    {"default", r.is_default},
                    {"source", !r.is_default ? "topic" : r.cluster_default ? "cluster" : "default"},
                    {"read_only", r.read_only}});
  return rows;
}

void describe_topic(const client_context& ctx, http_request& req, const responder& respond) {
  auto name = req.params["topic"];
  auto count = partition_count(ctx, name);
  if (!count) {
    respond(http_response::error(404, "unknown_topic", "unknown topic " + name));
    return;
  }
  std::vector<cluster::topic_partition> parts;
  for (int32_t p = 0; p < *count; ++p)
    parts.push_back({name, p});
  auto config = describe_config(defaults_of(ctx), config_of(ctx, name));
  gather_bounds(ctx, parts, [respond, name, config](std::vector<partition_bounds> bounds) {
    json rows = json::array();
    int64_t size = 0;
    for (size_t p = 0; p < bounds.size(); ++p) {
      const auto& b = bounds[p];
      json row{{"partition", p}, {"owner", b.owner ? json(*b.owner) : json(nullptr)}};
      if (b.error.empty()) {
        row["log_start_offset"] = b.log_start_offset;
        row["log_end_offset"] = b.log_end_offset;
        row["size_bytes"] = b.size_bytes;
        size += b.size_bytes;
      } else {
        row["error"] = b.error;
      }
      rows.push_back(std::move(row));
    }
    respond(http_response::json(
      200, json{{"name", name}, {"partitions", rows}, {"size_bytes", size}, {"config", config}}.dump()));
  });
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
  auto ok = [respond, name, defaults = defaults_of(ctx)](std::string& text) {
    respond(http_response::json(
      200, json{{"name", name}, {"config", text.empty() ? json::object() : json::parse(text)},
                {"configs", describe_config(defaults, text)}}
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

/// POST /v1/topics/{topic}/partitions/{partition}/delete-records
/// {"before_offset":N}: Kafka's DeleteRecords for one partition, on its
/// owner (partition_actor delete_records_atom).
void delete_records(const client_context& ctx, http_request& req, const responder& respond) {
  auto body = json::parse(req.body, nullptr, false);
  if (body.is_discarded() || !body.is_object() || !body.contains("before_offset")
      || !body["before_offset"].is_number_integer() || body["before_offset"].get<int64_t>() < -1) {
    respond(http_response::error(400, "invalid_request",
                                 "body must be {\"before_offset\":N}, N >= 0 or -1 for the log end"));
    return;
  }
  auto part = owned_partition(ctx, req, respond);
  if (!part)
    return;
  auto topic = req.params["topic"];
  auto partition = std::stoi(req.params["partition"]);
  ask<int64_t>(
    *ctx.system, *part, ctx.timeout,
    [respond, topic, partition](int64_t& start) {
      respond(http_response::json(
        200, json{{"topic", topic}, {"partition", partition}, {"log_start_offset", start}}.dump()));
    },
    fail_with(respond), delete_records_atom::value, body["before_offset"].get<int64_t>(), false);
}

void add_topic_routes(router& r, const client_context& ctx) {
  r.add("GET", "/v1/topics/{topic}", [ctx](http_request& req, responder respond) { describe_topic(ctx, req, respond); });
  r.add("PATCH", "/v1/topics/{topic}/config",
        [ctx](http_request& req, responder respond) { change_config(ctx, req, respond); });
  r.add("POST", "/v1/topics/{topic}/partitions/{partition}/delete-records",
        [ctx](http_request& req, responder respond) { delete_records(ctx, req, respond); });
}

}  // namespace moonmq::transport
