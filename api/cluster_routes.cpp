#include "api/cluster_routes.hpp"

#include <mutex>

#include <nlohmann/json.hpp>

#include "actors/ask.hpp"
#include "actors/direct_append.hpp"
#include "actors/errors.hpp"
#include "actors/session_probe.hpp"
#include "cluster/forwarded_produce.hpp"
#include "cluster/types.hpp"
#include "dataplane/topic_name.hpp"
#include "api/actor_answers.hpp"
#include "api/admin_routes.hpp"
#include "api/local_loads.hpp"
#include "util/logging.hpp"

namespace moonmq::transport {
namespace {

using json = nlohmann::json;

/// The answers of one batched forwarded produce: filled by the parts'
/// callbacks (on I/O worker threads), sent once the last one is in.
struct forwarded_gather {
  std::mutex mtx;
  std::vector<cluster::forwarded_answer> answers;
  size_t pending = 0;
  responder respond;

  void answer(size_t i, cluster::forwarded_answer a) {
    std::unique_lock<std::mutex> g{mtx};
    answers[i] = std::move(a);
    if (--pending != 0)
      return;
    g.unlock();
    respond(http_response::json(200, cluster::encode_forwarded_answers(answers)));
  }
};

/// A part refused by an actor error, with the answer a single-partition
/// produce would get (error_response).
cluster::forwarded_answer refused(int32_t partition, const caf::error& e) {
  auto why = error_response(e);
  auto j = json::parse(why.body, nullptr, false);
  auto text = [&](const char* key) {
    return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string{};
  };
  return {partition, why.status, -1, text("error"), text("message"), {}};
}

/// POST /cluster/topics/{topic}/records: every part routed as the
/// single-partition route routes it (404 not held here, 421 owned
/// elsewhere, 503 offline), the ones owned here appended in one
/// append_direct call; answered 200 with one entry per part.
void produce_forwarded_parts(const cluster_context& ctx, http_request& req, const responder& respond) {
  std::vector<cluster::forwarded_part> parts;
  if (auto why = cluster::decode_forwarded_parts(req.body, parts); !why.empty()) {
    respond(http_response::error(400, "invalid_request", why));
    return;
  }
  const auto& topic = req.params["topic"];
  bool durable = !(req.query.count("acks") && req.query["acks"] == "none");
  auto gather = std::make_shared<forwarded_gather>();
  gather->answers.resize(parts.size());
  gather->pending = parts.size();
  gather->respond = respond;
  auto topics = ctx.catalog->get();
  auto t = topics->find(topic);
  std::vector<direct_append> local;
  for (size_t i = 0; i < parts.size(); ++i) {
    auto p = parts[i].partition;
    if (t == topics->end() || static_cast<size_t>(p) >= t->second.partitions.size()) {
      gather->answer(i, {p, 404, -1, "unknown_partition", "no local partition " + topic + "/" + std::to_string(p), {}});
      continue;
    }
    auto route = ctx.owners->route(ctx.broker_id, cluster::topic_partition{topic, p});
    if (route.where == partition_route::kind::remote) {
      gather->answer(i, {p, 421, -1, "not_owner", "forwarded produce reached a broker that does not own it", route.owner});
      continue;
    }
    if (route.where == partition_route::kind::unowned) {
      gather->answer(i, {p, 503, -1, "partition_offline",
                         "the metadata log names no owner for this partition; no broker serves it", {}});
      continue;
    }
    local.push_back(direct_append{
      t->second.partitions[static_cast<size_t>(p)], std::move(parts[i].batch), durable,
      [gather, i, p](int64_t base) { gather->answer(i, {p, 200, base, {}, {}, {}}); },
      [gather, i, p](const caf::error& e) { gather->answer(i, refused(p, e)); }});
  }
  append_direct(*ctx.system, std::move(local), ctx.timeout);
}

}  // namespace

/// Runs `then` once the request's controller epoch passed the fence;
/// answers 400 (missing or malformed headers) or 409 (stale) otherwise.
void with_fence(caf::actor_system& sys, const cluster_state_actor& state, std::chrono::milliseconds timeout,
                const http_request& req, const responder& respond,
                std::function<void(int64_t epoch, const std::string& controller)> then) {
  const std::string* epoch_header = req.header("x-controller-epoch");
  const std::string* id_header = req.header("x-controller-id");
  if (!epoch_header || !id_header || id_header->empty() || epoch_header->empty() || epoch_header->size() > 18
      || epoch_header->find_first_not_of("0123456789") != std::string::npos) {
    respond(http_response::error(400, "missing_epoch",
                                 "control-plane requests need X-Controller-Epoch (a positive integer) and "
                                 "X-Controller-Id"));
    return;
  }
  auto at = std::stoll(*epoch_header);
  // A refusal names the fence's highest epoch and its holder ("epoch",
  // "holder"), so that a refused controller can tell a newer claim from a
  // tie at its own epoch.
  auto refused = [&sys, state, timeout, respond](const caf::error& e) {
    auto code = error_code_of(e);
    if (code != "stale_epoch" && code != "epoch_conflict") {
      respond(error_response(e));
      return;
    }
    auto body = nlohmann::json::parse(error_response(e).body);
    ask_many<int64_t, std::string>(
      sys, state, timeout,
      [respond, body](int64_t& highest, std::string& holder) mutable {
        body["epoch"] = highest;
        body["holder"] = holder;
        respond(http_response::json(409, body.dump()));
      },
      [respond, body](const caf::error&) { respond(http_response::json(409, body.dump())); }, get_atom::value);
  };
  ask<int64_t>(
    sys, state, timeout, [then, at, id = *id_header](int64_t&) { then(at, id); }, refused, observe_atom::value, at,
    *id_header);
}

router::guard cluster_token_guard(std::string token) {
  return [token = std::move(token)](const http_request& req) -> std::optional<http_response> {
    if (token.empty())
      return std::nullopt;
    const std::string* got = req.header("x-cluster-token");
    if (got && constant_time_equals(*got, token))
      return std::nullopt;
    return http_response::error(401, "unauthorized", "missing or wrong X-Cluster-Token");
  };
}

void add_cluster_routes(router& r, const cluster_context& ctx) {
  r.set_guard(cluster_token_guard(ctx.token));

  // Controller announcement: a controller claiming (or re-announcing) its
  // epoch. Accepted when not older than the highest epoch seen.
  r.add("POST", "/cluster/controller", [ctx](http_request& req, responder respond) {
    with_fence(*ctx.system, ctx.state, ctx.timeout, req, respond, [ctx, respond](int64_t at, const std::string& id) {
      respond(http_response::json(200, json{{"broker_id", ctx.broker_id}, {"epoch", at}, {"controller", id}}.dump()));
    });
  });

  // A peer's POST /admin/plugins/reload: rescan this broker's goals directory.
  r.add("POST", "/cluster/plugins/reload", [ctx](http_request&, responder respond) {
    if (!ctx.goals) {
      respond(http_response::error(503, "not_ready", "no goals directory configured"));
      return;
    }
    respond(http_response::json(200, reload_goal_plugins(*ctx.goals).dump()));
  });

  // Liveness probe between brokers (data plane).
  r.add("GET", "/cluster/health", [ctx](http_request&, responder respond) {
    respond(http_response::json(200, json{{"status", "ok"}, {"broker_id", ctx.broker_id}}.dump()));
  });

  // Where this broker believes each named partition lives (data plane).
  r.add("GET", "/cluster/owners", [ctx](http_request&, responder respond) {
    json list = json::array();
    // The snapshot is held for the loop: `*ctx.owners->get()` alone would
    // let the image be freed under it once a newer one is published.
    auto owners = ctx.owners->get();
    for (const auto& [tp, owner] : *owners)
      list.push_back(json{{"topic", tp.topic}, {"partition", tp.partition}, {"owner", owner}});
    respond(http_response::json(200, json{{"broker_id", ctx.broker_id}, {"owners", list}}.dump()));
  });

  // Records a new owner for a partition at the request's controller epoch.
  r.add("POST", "/cluster/owners", [ctx](http_request& req, responder respond) {
    auto body = json::parse(req.body, nullptr, false);
    if (!body.is_object() || !body.contains("topic") || !body["topic"].is_string() || !body.contains("partition")
        || !body["partition"].is_number_integer() || !body.contains("owner") || !body["owner"].is_string()) {
      respond(http_response::error(400, "invalid_request", "body must be {\"topic\",\"partition\",\"owner\"}"));
      return;
    }
    auto topic = body["topic"].get<std::string>();
    auto partition = body["partition"].get<int32_t>();
    auto owner = body["owner"].get<std::string>();
    if (body.contains("from") && !body["from"].is_string()) {
      respond(http_response::error(400, "invalid_request", "\"from\" must be a broker id"));
      return;
    }
    // A move's announcement names the partition's previous owner ("from"):
    // it applies only while this broker still sees that owner (or none), so
    // a late announcement never undoes a later move of the same partition.
    if (body.contains("from") && ctx.owners) {
      auto from = body["from"].get<std::string>();
      auto rows = ctx.owners->get();
      auto it = rows->find(cluster::topic_partition{topic, partition});
      auto current = it != rows->end() ? it->second : std::string{};
      if (!current.empty() && current != from && current != owner) {
        respond(http_response::json(409, json{{"error", "owner_changed"},
                                              {"message", topic + "/" + std::to_string(partition) + " is owned by "
                                                            + current + " here, not " + from},
                                              {"owner", current}}
                                           .dump()));
        return;
      }
    }
    if (ctx.shared_storage && ctx.owners) {
      auto rows = ctx.owners->get();
      auto it = rows->find(cluster::topic_partition{topic, partition});
      if (it != rows->end() && it->second != owner) {
        respond(http_response::json(409, json{{"error", "shared_storage"},
                                              {"message", "shared storage: " + topic + "/" + std::to_string(partition)
                                                            + " is owned by " + it->second
                                                            + "; a move hands a live owner's partition over, the "
                                                              "controller's failover a fenced one's"},
                                              {"owner", it->second}}
                                           .dump()));
        return;
      }
    }
    with_fence(*ctx.system, ctx.state, ctx.timeout, req, respond, [ctx, respond, topic, partition, owner](int64_t at, const std::string&) {
      ask<bool>(
        *ctx.system, ctx.state, ctx.timeout,
        [respond, topic, partition, owner](bool&) {
          respond(http_response::json(200, json{{"topic", topic}, {"partition", partition}, {"owner", owner}}.dump()));
        },
        fail_with(respond), owner_atom::value, topic, partition, owner, at);
    });
  });

  // A produce forwarded by a broker that does not own the partition: the
  // body is one encoded v2 batch (offsets assigned here). One hop only: a
  // broker that does not own it either answers 421.
  r.add("POST", "/cluster/partitions/{topic}/{partition}/records", [ctx](http_request& req, responder respond) {
    auto local = route_partition(*ctx.catalog, req, respond);
    if (!local)
      return;
    auto route = ctx.owners->route(ctx.broker_id, cluster::topic_partition{req.params["topic"], local->first});
    if (route.where == partition_route::kind::remote) {
      respond(http_response::json(421, json{{"error", "not_owner"}, {"owner", route.owner},
                                            {"message", "forwarded produce reached a broker that does not own it"}}
                                           .dump()));
      return;
    }
    if (route.where == partition_route::kind::unowned) {
      respond(http_response::error(503, "partition_offline",
                                   "the metadata log names no owner for this partition; no broker serves it"));
      return;
    }
    bool durable = !(req.query.count("acks") && req.query["acks"] == "none");
    std::vector<direct_append> one;  // not an initializer list: that would copy the batch
    one.push_back(direct_append{
      local->second, std::move(req.body), durable,
      [respond](int64_t base) { respond(http_response::json(200, json{{"base_offset", base}}.dump())); },
      fail_with(respond)});
    append_direct(*ctx.system, std::move(one), ctx.timeout);
  });

  // A transaction marker (docs/transactions.md "Markers"), sent by the
  // transaction's coordinator to the partition's owner: body {"topic",
  // "partition","producer_id","producer_epoch","commit","coordinator_epoch"};
  // 200 {"offset"} once durable; 421 naming the owner elsewhere, 503 with
  // no owner or when the partition is sealed for a move (the coordinator
  // retries), 409 invalid_producer_epoch for an epoch older than the
  // partition's, 404 for a partition not held here.
  r.add("POST", "/cluster/txn/markers", [ctx](http_request& req, responder respond) {
    auto body = json::parse(req.body, nullptr, false);
    auto field = [&](const char* key) { return body.is_object() && body.contains(key) ? &body[key] : nullptr; };
    const auto* topic = field("topic");
    const auto* partition = field("partition");
    const auto* pid = field("producer_id");
    const auto* epoch = field("producer_epoch");
    const auto* commit = field("commit");
    if (!topic || !topic->is_string() || !partition || !partition->is_number_integer() || !pid
        || !pid->is_number_integer() || !epoch || !epoch->is_number_integer() || !commit || !commit->is_boolean()
        || epoch->get<int64_t>() < 0 || epoch->get<int64_t>() > 32767) {
      respond(http_response::error(400, "invalid_request",
                                   "body must be {\"topic\",\"partition\",\"producer_id\",\"producer_epoch\" "
                                   "(0..32767),\"commit\":bool,\"coordinator_epoch\"}"));
      return;
    }
    const auto name = topic->get<std::string>();
    const auto index = partition->get<int32_t>();
    auto route = ctx.owners->route(ctx.broker_id, cluster::topic_partition{name, index});
    if (route.where == partition_route::kind::remote) {
      respond(http_response::json(421, json{{"error", "not_owner"}, {"owner", route.owner},
                                            {"message", "a marker reached a broker that does not own the partition"}}
                                           .dump()));
      return;
    }
    if (route.where == partition_route::kind::unowned) {
      respond(http_response::error(503, "partition_offline", "the metadata log names no owner for " + name + "/"
                                                               + std::to_string(index)));
      return;
    }
    auto topics = ctx.catalog->get();
    auto t = topics->find(name);
    if (t == topics->end() || index < 0 || static_cast<size_t>(index) >= t->second.partitions.size()) {
      respond(http_response::error(404, "unknown_partition", name + "/" + std::to_string(index) + " is not held here"));
      return;
    }
    const auto* cepoch = field("coordinator_epoch");
    const int64_t coordinator_epoch = cepoch && cepoch->is_number_integer() ? cepoch->get<int64_t>() : 0;
    ask<int64_t>(
      *ctx.system, t->second.partitions[static_cast<size_t>(index)], ctx.timeout,
      [respond](int64_t& offset) { respond(http_response::json(200, json{{"offset", offset}}.dump())); },
      fail_with(respond), marker_atom::value, pid->get<int64_t>(), static_cast<int16_t>(epoch->get<int64_t>()),
      commit->get<bool>(), static_cast<int32_t>(coordinator_epoch));
  });

  // The same for several partitions of one topic in one request (the body
  // of cluster/forwarded_produce.hpp): what a broker sends for a client's
  // produce whose parts another broker owns.
  r.add("POST", "/cluster/topics/{topic}/records", [ctx](http_request& req, responder respond) {
    produce_forwarded_parts(ctx, req, respond);
  });

  // Log bounds of a local partition (data plane; a move's copy loop).
  r.add("GET", "/cluster/partitions/{topic}/{partition}/log-end", [ctx](http_request& req, responder respond) {
    auto local = route_partition(*ctx.catalog, req, respond);
    if (!local)
      return;
    auto part = local->second;
    ctx.system->spawn(
      [](caf::event_based_actor* self, partition_actor p, std::chrono::milliseconds timeout, responder answer) {
        self->request(p, timeout, bounds_atom::value)
          .then(
            [answer](int64_t lo, int64_t hi, int64_t size) {
              answer(http_response::json(
                200, json{{"log_start_offset", lo}, {"log_end_offset", hi}, {"size_bytes", size}}.dump()));
            },
            [answer](caf::error& e) { answer(error_response(e)); });
      },
      part, ctx.timeout, respond);
  });

  // Every partition held here with its owner, bounds and traffic counters
  // (data plane; /admin/cluster surveys it on every peer).
  r.add("GET", "/cluster/loads", [ctx](http_request&, responder respond) {
    collect_local_loads(*ctx.system, ctx.catalog->get(), ctx.owners ? ctx.owners->get() : nullptr, ctx.broker_id,
                        ctx.loads_timeout, [respond, session = ctx.session_load](json body) {
                          // The session-placement report (null until the meter's first sample).
                          if (session)
                            body["session_load"] = session->get();
                          respond(http_response::json(200, body.dump()));
                        }, ctx.traits);
  });
}

}  // namespace moonmq::transport
