#include "api/admin_routes.hpp"

#include <nlohmann/json.hpp>

#include "actors/ask.hpp"
#include "actors/catalog_view.hpp"
#include "actors/errors.hpp"
#include "cluster/txn_coordinator.hpp"
#include "plugins/goal_loader.hpp"
#include "api/console_routes.hpp"
#include "api/metrics_scrape.hpp"
#include "util/logging.hpp"
#include "util/metrics.hpp"

namespace moonmq::transport {
namespace {

using json = nlohmann::json;

json info_json(const actor_info& a) {
  json j{{"id", a.id}, {"name", a.name}, {"kind", a.kind}, {"spawned_at", a.spawned_at}};
  if (a.responsive) {
    auto state = json::parse(a.state, nullptr, false);
    j["status"] = "ok";
    j["state"] = state.is_discarded() ? json(a.state) : state;
  } else {
    j["status"] = "unresponsive";
    j["state"] = nullptr;
  }
  return j;
}

std::function<void(const caf::error&)> fail_with(const responder& respond, const std::string& what) {
  return [respond, what](const caf::error& e) {
    respond(http_response::error(http_status_of(e), error_code_of(e), what + ": " + caf::to_string(e)));
  };
}


/// The partition actor of the route's {topic}/{partition} on this broker,
/// or nullopt with the error answered: 503 without a catalogue, 404 for an
/// unknown topic or partition and, when `owned` and the metadata image
/// names another owner (or none), 409 `not_owner` naming it.
std::optional<partition_actor> local_partition(const admin_context& ctx, http_request& req, const responder& respond,
                                               bool owned) {
  if (!ctx.catalog) {
    respond(http_response::error(503, "not_ready", "no topic catalogue on this listener"));
    return std::nullopt;
  }
  const auto& topic = req.params["topic"];
  const auto& raw = req.params["partition"];
  auto topics = ctx.catalog->get();
  auto t = topics->find(topic);
  if (t == topics->end()) {
    respond(http_response::error(404, "unknown_topic", "unknown topic " + topic));
    return std::nullopt;
  }
  if (raw.empty() || raw.size() > 6 || raw.find_first_not_of("0123456789") != std::string::npos
      || std::stoul(raw) >= t->second.partitions.size()) {
    respond(http_response::error(404, "unknown_partition", "topic " + topic + " has no partition '" + raw + "'"));
    return std::nullopt;
  }
  const auto index = static_cast<int32_t>(std::stoul(raw));
  if (owned && ctx.owners) {
    auto route = ctx.owners->route(ctx.broker_id, cluster::topic_partition{topic, index});
    if (route.where != partition_route::kind::local) {
      respond(http_response::error(409, "not_owner", "partition " + topic + "-" + raw + " is "
                                                       + (route.owner.empty() ? "owned by no broker"
                                                                              : "owned by " + route.owner)
                                                       + ", not by " + ctx.broker_id + "; ask its owner"));
      return std::nullopt;
    }
  }
  return t->second.partitions[static_cast<size_t>(index)];
}

}  // namespace

void add_admin_routes(router& r, const admin_context& ctx) {
  if (!ctx.token.empty()) {
    r.set_guard([token = ctx.token](const http_request& req) -> std::optional<http_response> {
      // The console's static files carry no data; its data calls send the token.
      if (req.path == "/health" || is_console_path(req.path))
        return std::nullopt;
      const std::string* auth = req.header("authorization");
      static const std::string prefix = "Bearer ";
      if (auth && auth->rfind(prefix, 0) == 0 && constant_time_equals(auth->substr(prefix.size()), token))
        return std::nullopt;
      auto res = http_response::error(401, "unauthorized", "missing or wrong bearer token");
      res.headers.emplace_back("WWW-Authenticate", "Bearer");
      return res;
    });
  }

  r.add("GET", "/health", [id = ctx.broker_id](http_request&, responder respond) {
    respond(http_response::json(200, json{{"status", "ok"}, {"broker_id", id}}.dump()));
  });

  // The registry's series plus those computed from live state at each
  // scrape (docs/admin-api.md "Metrics").
  r.add("GET", "/metrics", [ctx](http_request&, responder respond) {
    auto answer = [respond](std::string scraped) {
      http_response res;
      res.content_type = "text/plain; version=0.0.4; charset=utf-8";
      res.body = metrics::registry::global().render() + scraped;
      respond(std::move(res));
    };
    if (!ctx.system) {
      answer({});
      return;
    }
    scrape_context sc;
    sc.system = ctx.system;
    sc.broker_id = ctx.broker_id;
    sc.catalog = ctx.catalog;
    sc.owners = ctx.owners;
    sc.groups = ctx.groups;
    sc.reassigner = ctx.reassigner;
    sc.timeout = ctx.scrape_timeout;
    collect_scrape_metrics(sc, std::move(answer));
  });

  r.add("GET", "/admin/actors", [ctx](http_request&, responder respond) {
    ask<std::vector<actor_info>>(
      *ctx.system, ctx.registry, ctx.timeout,
      [respond](std::vector<actor_info>& infos) {
        json list = json::array();
        for (const auto& a : infos)
          list.push_back(info_json(a));
        respond(http_response::json(200, json{{"actors", list}}.dump()));
      },
      fail_with(respond, "listing actors failed"), list_atom::value);
  });

  r.add("GET", "/admin/plugins", [goals = ctx.goals](http_request&, responder respond) {
    if (!goals) {
      respond(http_response::error(503, "not_ready", "no goals directory configured"));
      return;
    }
    respond(http_response::json(200, plugins::plugins_json(goals->current()).dump()));
  });

  // A rescan loads libraries from disk: rare and short, so it runs here.
  // Then every peer rescans its own directory (docs/admin-api.md): the
  // answer is this broker's set plus one row per peer, and 502 when some
  // peer did not reload.
  r.add("POST", "/admin/plugins/reload", [ctx](http_request&, responder respond) {
    if (!ctx.goals) {
      respond(http_response::error(503, "not_ready", "no goals directory configured"));
      return;
    }
    auto body = reload_goal_plugins(*ctx.goals);
    auto peers = ctx.peers->all();
    if (peers.empty()) {
      respond(http_response::json(200, body.dump()));
      return;
    }
    survey_peers(peers, "POST", "/cluster/plugins/reload", ctx.peer_timeout,
                 [respond, body, self = ctx.broker_id](std::vector<peer_answer> answers) mutable {
                   json brokers = json::array();
                   brokers.push_back({{"id", self}, {"ok", true}, {"goals", body["goals"]}, {"errors", body["errors"]}});
                   bool all = true;
                   for (auto& a : answers) {
                     json row{{"id", a.id}, {"ok", a.ok}};
                     if (a.ok) {
                       row["goals"] = a.body.value("goals", json::array());
                       row["errors"] = a.body.value("errors", json::array());
                     } else {
                       row["error"] = a.error;
                       all = false;
                     }
                     brokers.push_back(std::move(row));
                   }
                   body["brokers"] = std::move(brokers);
                   respond(http_response::json(all ? 200 : 502, body.dump()));
                 });
  });

  // The operator's repair of a corrupt partition log (docs/storage.md,
  // "Repair"): the partition actor cuts at the damage and comes online.
  r.add("POST", "/admin/partitions/{topic}/{partition}/truncate-corrupt", [ctx](http_request& req,
                                                                               responder respond) {
    auto partition = local_partition(ctx, req, respond, false);
    if (!partition)
      return;
    ask<std::string>(
      *ctx.system, *partition, ctx.repair_timeout,
      [respond](std::string& report) { respond(http_response::json(200, report)); },
      fail_with(respond, "repairing partition " + req.params["topic"] + "-" + req.params["partition"] + " failed"),
      repair_atom::value);
  });

  // The operator's abort of a transaction a partition holds open that no
  // coordinator knows of (docs/transactions.md "Aborting a transaction by
  // hand"; Kafka's KIP-664): an ABORT marker of the producer, written here
  // by the partition's owner as a coordinator's marker is.
  r.add("POST", "/admin/partitions/{topic}/{partition}/abort-transaction", [ctx](http_request& req,
                                                                                responder respond) {
    auto body = json::parse(req.body, nullptr, false);
    if (!body.is_object() || !body["producer_id"].is_number_integer() || !body["producer_epoch"].is_number_integer()
        || body["producer_id"].get<int64_t>() < 0 || body["producer_epoch"].get<int64_t>() < 0
        || body["producer_epoch"].get<int64_t>() > 32767) {
      respond(http_response::error(400, "invalid_request",
                                   R"(the body is {"producer_id":N,"producer_epoch":E} with N >= 0 and 0 <= E <= 32767)"));
      return;
    }
    const auto pid = body["producer_id"].get<int64_t>();
    const auto epoch = static_cast<int16_t>(body["producer_epoch"].get<int64_t>());
    // A transaction its coordinator knows is ended there, on every partition
    // at once: one aborted here alone could be committed on the others.
    auto txns = ctx.owners ? ctx.owners->transactions() : nullptr;  // held for the loop
    if (txns)
      for (const auto& [id, rec] : *txns)
        if (rec.producer_id == pid
            && (rec.state == cluster::txn_state::ongoing || cluster::ending(rec))) {
          respond(http_response::error(409, "coordinated_transaction",
                                       "producer " + std::to_string(pid) + " belongs to transactional id " + id
                                         + " (state " + cluster::to_string(rec.state) + "): POST /admin/transactions/"
                                         + id + "/abort on its coordinator instead"));
          return;
        }
    auto partition = local_partition(ctx, req, respond, true);
    if (!partition)
      return;
    ask<int64_t>(
      *ctx.system, *partition, ctx.timeout,
      [respond, pid, epoch](int64_t offset) {
        respond(http_response::json(
          200, json{{"producer_id", pid}, {"producer_epoch", epoch}, {"marker_offset", offset}}.dump()));
      },
      fail_with(respond, "the abort marker on " + req.params["topic"] + "-" + req.params["partition"] + " failed"),
      marker_atom::value, pid, epoch, false, int32_t{0});
  });

  r.add("GET", "/admin/actors/{id}", [ctx](http_request& req, responder respond) {
    const auto& raw = req.params["id"];
    uint64_t id = 0;
    if (raw.empty() || raw.size() > 19 || raw.find_first_not_of("0123456789") != std::string::npos) {
      respond(http_response::error(400, "bad_request", "actor id must be a decimal number, got '" + raw + "'"));
      return;
    }
    id = std::stoull(raw);
    ask<actor_info>(
      *ctx.system, ctx.registry, ctx.timeout,
      [respond](actor_info& a) { respond(http_response::json(200, info_json(a).dump())); },
      fail_with(respond, "inspecting actor " + raw + " failed"), inspect_atom::value, id);
  });
}

json reload_goal_plugins(plugins::goal_registry& goals) {
  auto report = goals.reload();
  log::get("plugins")->info("plugins.reloaded dir={} goals={} errors={}", goals.dir(), report.goals.size(),
                            report.errors.size());
  for (const auto& e : report.errors)
    log::get("plugins")->warn("plugins.refused path={} error=\"{}\"", e.path, e.message);
  return plugins::plugins_json(report);
}

}  // namespace moonmq::transport
