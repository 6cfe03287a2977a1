#include "api/cluster_admin_routes.hpp"

#include <chrono>
#include <mutex>

#include <nlohmann/json.hpp>

#include "actors/ask.hpp"
#include "actors/errors.hpp"
#include "cluster/lease_gate.hpp"
#include "cluster/move_journal.hpp"
#include "cluster/partition_map.hpp"
#include "raft/types.hpp"
#include "api/actor_answers.hpp"
#include "api/local_loads.hpp"
#include "util/fan_in.hpp"

namespace moonmq::transport {
namespace {

using json = nlohmann::json;

/// One /admin/cluster answer in the making: the peers' /cluster/loads
/// answers and this broker's own loads, gathered in parallel.
struct cluster_parts {
  std::vector<peer_answer> peers;
  json local;
};

json brokers_json(const cluster_admin_context& ctx, const std::vector<peer_answer>& answers) {
  json brokers = json::array();
  brokers.push_back(json{{"id", ctx.broker_id},
                         {"alive", true},
                         {"self", true},
                         {"client_address", ctx.client_address ? ctx.client_address() : std::string{}}});
  if (ctx.raft && ctx.owners) {
    auto standing = ctx.owners->standing();
    brokers.back()["state"] = standing->removed.count(ctx.broker_id)    ? "removed"
                              : standing->draining.count(ctx.broker_id) ? "draining"
                                                                        : "active";
  }
  // One row per surveyed peer (a broker that registered after the survey
  // began shows from the next answer on).
  for (size_t i = 0; i < answers.size(); ++i) {
    auto known = ctx.peers->find(answers[i].id);
    cluster_peer peer = known ? *known : cluster_peer{answers[i].id, {}, {}, {}, nullptr, {}};
    json b{{"id", peer.id}, {"alive", answers[i].ok}, {"self", false},
           {"address", peer.address}, {"client_address", peer.client_address}};
    if (ctx.raft && ctx.owners) {
      auto standing = ctx.owners->standing();
      b["fenced"] = standing->fenced.count(peer.id) != 0;
      b["state"] = standing->removed.count(peer.id) ? "removed" : standing->draining.count(peer.id) ? "draining" : "active";
    }
    if (!answers[i].ok)
      b["error"] = answers[i].error;
    brokers.push_back(std::move(b));
  }
  return brokers;
}

/// Every partition any live broker holds, merged into one owner each.
json partitions_json(const cluster_admin_context& ctx, const json& local, const std::vector<peer_answer>& answers) {
  auto reports = cluster::parse_loads(local);
  for (const auto& a : answers)
    if (a.ok) {
      auto more = cluster::parse_loads(a.body);
      reports.insert(reports.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
    }
  json list = json::array();
  const cluster::broker_id self{ctx.broker_id};
  for (const auto& [tp, p] : cluster::merge_partition_reports(reports)) {
    json holders = json::array();
    bool here = false;
    for (const auto& h : p.holders) {
      holders.push_back(h.str());
      here = here || h == self;
    }
    json row{{"topic", tp.topic},
             {"partition", tp.partition},
             {"owner", p.owner.str()},
             {"holders", std::move(holders)},
             {"local", here},
             {"log_start_offset", p.log_start_offset},
             {"log_end_offset", p.log_end_offset},
             {"size_bytes", p.size_bytes}};
    if (p.conflict)
      row["conflict"] = true;
    if (ctx.raft && ctx.owners)  // the metadata log's owner epoch (docs/metadata.md "Owner epochs")
      row["owner_epoch"] = ctx.owners->owner_and_epoch(tp).second;
    list.push_back(std::move(row));
  }
  return list;
}

void answer(const cluster_admin_context& ctx, const responder& respond, json brokers, json partitions) {
  if (!ctx.state) {
    respond(http_response::json(200, json{{"brokers", std::move(brokers)},
                                          {"partitions", std::move(partitions)},
                                          {"controller", {{"id", nullptr}, {"epoch", 0}}}}
                                       .dump()));
    return;
  }
  ask_many<int64_t, std::string>(
    *ctx.system, *ctx.state, std::chrono::seconds(5),
    [respond, brokers, partitions, raft = ctx.raft, owners = ctx.owners](int64_t& epoch, std::string& holder) {
      json controller{{"id", holder.empty() ? json(nullptr) : json(holder)}, {"epoch", epoch}};
      json body{{"brokers", brokers}, {"partitions", partitions}};
      if (raft && owners) {
        // From the image: a fenced broker answers no survey, so its
        // partitions are listed from the metadata log.
        auto fenced = owners->fenced();
        json offline = json::array();
        if (!fenced->empty()) {
          auto table = owners->get();  // held for the loop
          for (const auto& [tp, owner] : *table)
            if (fenced->count(owner))
              offline.push_back(json{{"topic", tp.topic}, {"partition", tp.partition}, {"owner", owner}});
        }
        body["fenced_brokers"] = std::vector<std::string>(fenced->begin(), fenced->end());
        body["offline_partitions"] = std::move(offline);
      }
      if (raft) {
        // With Raft the epoch is the term; CONTRACT §4 adds term and commit index.
        auto s = raft->get();
        controller["term"] = s.term;
        controller["commit_index"] = s.commit_index;
        body["term"] = s.term;
        body["commit_index"] = s.commit_index;
        // The broker lease (docs/shared-storage.md "The lease"); remaining
        // is null for a leader alone, whose lease has no end.
        auto now = std::chrono::steady_clock::now();
        auto remaining = cluster::lease_gate::remaining_ms(s.lease_deadline_ns, now);
        body["raft"] = {{"role", s.role},
                        {"applied_index", s.applied_index},
                        {"lease_valid", cluster::lease_gate::valid(s.lease_deadline_ns, now)},
                        {"lease_remaining_ms", remaining ? json(*remaining) : json(nullptr)},
                        {"lease_ms", s.lease_ms}};
      }
      body["controller"] = std::move(controller);
      respond(http_response::json(200, body.dump()));
    },
    [respond](const caf::error& e) {
      respond(http_response::error(http_status_of(e), error_code_of(e), "cluster state: " + caf::to_string(e)));
    },
    get_atom::value);
}

/// Counts the unfinished moves from or to broker `id` in this broker's
/// journal and every reachable peer's (GET /cluster/moves), then calls
/// `done` on some thread. A peer that does not answer counts nothing.
void moves_naming(const cluster_admin_context& ctx, const std::string& id, std::function<void(int64_t)> done) {
  auto counted = util::fan_in<int64_t>::make(2, 0, [done = std::move(done)](int64_t& count) { done(count); });
  auto add = [counted, id](const json& rows) {
    counted->add([&](int64_t& count) {
      if (rows.is_array())
        for (const auto& row : rows) {
          auto state = cluster::parse_move_state(row.value("state", std::string{}));
          if (state && !cluster::is_terminal(*state)
              && (row.value("from", std::string{}) == id || row.value("to", std::string{}) == id))
            ++count;
        }
    });
  };
  if (ctx.reassigner)
    ask<std::string>(
      *ctx.system, *ctx.reassigner, std::chrono::seconds(5),
      [add](std::string& rows) { add(json::parse(rows, nullptr, false)); }, [add](const caf::error&) { add(json()); },
      list_atom::value);
  else
    add(json());
  survey_peers(ctx.peers->all(), "/cluster/moves", ctx.probe_timeout, [add](std::vector<peer_answer> answers) {
    json rows = json::array();
    for (auto& a : answers)
      if (a.ok && a.body.is_object() && a.body.contains("moves") && a.body["moves"].is_array())
        for (auto& row : a.body["moves"])
          rows.push_back(std::move(row));
    add(rows);
  });
}

bool needs_metadata_log(const cluster_admin_context& ctx, const responder& respond) {
  if (ctx.state && ctx.raft)
    return false;
  respond(http_response::error(409, "no_metadata_log",
                               "drain and removal of brokers need a Cluster section with Raft (the metadata log)"));
  return true;
}

/// GET /admin/brokers[/{id}], POST|DELETE /admin/brokers/{id}/drain and
/// DELETE /admin/brokers/{id} (docs/admin-api.md "Brokers"): the standing
/// of each broker in the metadata log, changed through it.
void add_broker_routes(router& r, const cluster_admin_context& ctx) {
  auto list = [ctx](const responder& respond, std::function<void(json&)> shape) {
    ask<std::string>(
      *ctx.system, *ctx.state, std::chrono::seconds(5),
      [respond, shape](std::string& rows) {
        auto j = json::parse(rows, nullptr, false);
        shape(j);
      },
      fail_with(respond), broker_atom::value);
  };
  r.add("GET", "/admin/brokers", [ctx, list](http_request&, responder respond) {
    if (needs_metadata_log(ctx, respond))
      return;
    list(respond, [respond](json& rows) { respond(http_response::json(200, json{{"brokers", rows}}.dump())); });
  });
  r.add("GET", "/admin/brokers/{id}", [ctx, list](http_request& req, responder respond) {
    if (needs_metadata_log(ctx, respond))
      return;
    list(respond, [ctx, respond, id = req.params["id"]](json& rows) {
      for (auto& row : rows)
        if (row.value("id", std::string{}) == id) {
          // The drain's progress: partitions still owned, and moves not ended.
          moves_naming(ctx, id, [respond, row](int64_t moves) mutable {
            row["moves_in_flight"] = moves;
            respond(http_response::json(200, row.dump()));
          });
          return;
        }
      respond(http_response::error(404, "unknown_broker", "no broker " + id + " in this cluster"));
    });
  });
  auto change = [ctx](const std::string& what, int status) {
    return [ctx, what, status](http_request& req, responder respond) {
      if (needs_metadata_log(ctx, respond))
        return;
      ask<std::string>(
        *ctx.system, *ctx.state, std::chrono::seconds(30),  // a forwarded proposal may take two PeerTimeouts
        [respond, status](std::string& row) { respond(http_response::json(status, row)); }, fail_with(respond),
        broker_atom::value, req.params["id"], what);
    };
  };
  // 202: the drain is recorded; the balancer moves the partitions next.
  r.add("POST", "/admin/brokers/{id}/drain", change("drain", 202));
  r.add("DELETE", "/admin/brokers/{id}/drain", change("undrain", 200));
  // A move off the broker owns its partition at the destination from the
  // cutover on, but only its source finishes it (offsets, confirm): a broker
  // removed and stopped before that would leave the partition sealed.
  r.add("DELETE", "/admin/brokers/{id}", [ctx, remove = change("remove", 200)](http_request& req, responder respond) {
    if (needs_metadata_log(ctx, respond))
      return;
    auto id = req.params["id"];
    moves_naming(ctx, id, [ctx, req, respond, remove, id](int64_t moves) mutable {
      if (moves > 0) {
        respond(http_response::error(409, "moves_in_flight", "broker " + id + " has " + std::to_string(moves)
                                                               + " move(s) not ended; removal waits for them"));
        return;
      }
      remove(req, respond);
    });
  });
}

}  // namespace

void add_cluster_admin_routes(router& r, const cluster_admin_context& ctx) {
  r.add("GET", "/admin/cluster", [ctx](http_request&, responder respond) {
    auto round = util::fan_in<cluster_parts>::make(2, {}, [ctx, respond](cluster_parts& p) {
      answer(ctx, respond, brokers_json(ctx, p.peers), partitions_json(ctx, p.local, p.peers));
    });
    // A peer is alive when its /cluster/loads answered 200 in time.
    survey_peers(ctx.peers->all(), "/cluster/loads", ctx.probe_timeout, [round](std::vector<peer_answer> answers) {
      round->add([&](cluster_parts& p) { p.peers = std::move(answers); });
    });
    // Local partitions get half the peers' deadline, as a peer's own
    // /cluster/loads does (cluster_context::loads_timeout).
    collect_local_loads(*ctx.system, ctx.catalog->get(), ctx.owners ? ctx.owners->get() : nullptr, ctx.broker_id,
                        ctx.probe_timeout / 2,
                        [round](json body) { round->add([&](cluster_parts& p) { p.local = std::move(body); }); },
                        ctx.traits);
  });

  // The balance loop's status and last pass; a plan from the live model now.
  // `?broker=<id>`: another broker's, asked on its cluster listener (the
  // controller's last pass is the one that acted).
  r.add("GET", "/admin/balancer", [ctx](http_request& req, responder respond) {
    if (auto b = req.query.find("broker"); b != req.query.end() && b->second != ctx.broker_id) {
      auto peer = ctx.peers->find(b->second);
      if (!peer) {
        respond(http_response::error(404, "unknown_broker", "no broker " + b->second + " in this cluster"));
        return;
      }
      call_peer(*peer, "GET", "/cluster/balancer", "", 0, {}, ctx.probe_timeout,
                [respond, id = b->second](int status, json body, std::string error) {
                  if (status == 200 && body.is_object())
                    respond(http_response::json(200, body.dump()));
                  else if (status > 0)  // it answered, with an error: say which
                    respond(http_response::error(
                      502, "peer_error",
                      "broker " + id + " answered " + std::to_string(status) + ": "
                        + (body.is_object() ? body.value("message", body.value("error", body.dump())) : body.dump())));
                  else
                    respond(http_response::error(502, "peer_unreachable", "broker " + id + " did not answer: " + error));
                });
      return;
    }
    if (!ctx.balancer) {
      respond(http_response::json(200, json{{"enabled", false}, {"reason", "no Cluster section: nothing to balance"}}.dump()));
      return;
    }
    ask<std::string>(
      *ctx.system, *ctx.balancer, std::chrono::seconds(5),
      [respond](std::string& status) { respond(http_response::json(200, status)); },
      [respond](const caf::error& e) { respond(http_response::error(http_status_of(e), error_code_of(e), caf::to_string(e))); },
      get_atom::value);
  });
  // The cluster's dynamic balancer settings (config/dynamic.hpp), committed
  // to the metadata log: every broker applies them from the next pass.
  r.add("PATCH", "/admin/balancer", [ctx](http_request& req, responder respond) {
    if (!ctx.state || !ctx.raft) {
      respond(http_response::error(409, "no_metadata_log",
                                   "dynamic balancer settings need a Cluster section with Raft (the metadata log); "
                                   "change the Autobalance keys and restart instead"));
      return;
    }
    auto body = json::parse(req.body, nullptr, false);
    if (body.is_discarded()) {
      respond(http_response::error(400, "invalid_request", "the body is not JSON"));
      return;
    }
    ask<std::string>(
      *ctx.system, *ctx.state, std::chrono::seconds(30),  // a forwarded proposal may take two PeerTimeouts
      [respond](std::string& merged) {
        respond(http_response::json(200, json{{"settings", json::parse(merged, nullptr, false)}}.dump()));
      },
      fail_with(respond), config_atom::value, body.dump());
  });
  add_broker_routes(r, ctx);
  // Every transactional id's record as this broker's metadata image holds
  // it (docs/transactions.md "The coordinator"), the rows of a snapshot.
  r.add("GET", "/admin/transactions", [ctx](http_request&, responder respond) {
    if (!ctx.state || !ctx.raft || !ctx.owners) {
      respond(http_response::error(409, "no_metadata_log",
                                   "transactions need a Cluster section with Raft (the metadata log)"));
      return;
    }
    auto rows = raft::detail::txn_rows(*ctx.owners->transactions());
    respond(http_response::json(200, json{{"transactions", std::move(rows)}}.dump()));
  });
  // An operator's abort of a transaction left open (docs/transactions.md
  // "Aborting a transaction by hand"), on the id's coordinator.
  r.add("POST", "/admin/transactions/{id}/abort", [ctx](http_request& req, responder respond) {
    auto txns = ctx.txns ? ctx.txns->get() : std::nullopt;
    if (!txns) {
      respond(http_response::error(409, "no_metadata_log",
                                   "no transaction coordinator on this broker: transactions need a Cluster "
                                   "section with Raft (the metadata log) and the Kafka listener"));
      return;
    }
    cluster::txn_request abort;
    abort.what = cluster::txn_request::kind::abort;
    abort.transactional_id = req.params["id"];
    ask<cluster::txn_answer>(
      *ctx.system, *txns, std::chrono::seconds(30),
      [respond, id = abort.transactional_id](cluster::txn_answer& a) {
        using cluster::txn_error;
        switch (a.error) {
          case txn_error::none: {
            // A message says the markers are not all written yet (the
            // abort is durable; the coordinator's tick finishes it).
            json body{{"transactional_id", id},
                      {"state", "prepare_abort"},
                      {"producer_id", a.producer_id},
                      {"producer_epoch", a.producer_epoch},
                      {"markers", a.message.empty() ? "written" : "pending"}};
            if (!a.message.empty())
              body["message"] = a.message;
            respond(http_response::json(a.message.empty() ? 200 : 202, body.dump()));
            return;
          }
          case txn_error::not_coordinator:
            respond(http_response::error(409, "not_coordinator", a.message + "; ask the broker that does"));
            return;
          case txn_error::invalid_txn_state:
            respond(http_response::error(409, "no_open_transaction", a.message));
            return;
          case txn_error::concurrent_transactions:
            respond(http_response::error(409, "transaction_ending", a.message + "; it ends on its own"));
            return;
          default:
            respond(http_response::error(503, "coordinator_not_available", a.message));
        }
      },
      fail_with(respond), txn_atom::value, std::move(abort));
  });
  r.add("POST", "/admin/balancer/plan", [ctx](http_request&, responder respond) {
    if (!ctx.balancer) {
      respond(http_response::error(409, "not_a_cluster", "no Cluster section: nothing to balance"));
      return;
    }
    ask<std::string>(
      *ctx.system, *ctx.balancer, std::chrono::seconds(30),
      [respond](std::string& pass) { respond(http_response::json(200, pass)); },
      [respond](const caf::error& e) { respond(http_response::error(http_status_of(e), error_code_of(e), caf::to_string(e))); },
      plan_atom::value);
  });
}

void add_cluster_balancer_route(router& r, const cluster_admin_context& ctx) {
  r.add("GET", "/cluster/balancer", [ctx](http_request&, responder respond) {
    // The bound of the relaying broker's call (GET /admin/balancer?broker=),
    // so that a slow balancer is told as such rather than as silence.
    ask<std::string>(
      *ctx.system, *ctx.balancer, ctx.probe_timeout - ctx.probe_timeout / 4,
      [respond](std::string& status) { respond(http_response::json(200, status)); }, fail_with(respond),
      get_atom::value);
  });
}

}  // namespace moonmq::transport
