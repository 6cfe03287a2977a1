#include "api/move_routes.hpp"

#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "actors/ask.hpp"
#include "actors/errors.hpp"
#include "cluster/move_messages.hpp"
#include "cluster/partition_map.hpp"
#include "cluster/reassignment_request.hpp"
#include "api/actor_answers.hpp"
#include "api/cluster_routes.hpp"
#include "api/move_routes_impl.hpp"
#include "peers/move_submit.hpp"
#include "util/fan_in.hpp"
#include "util/logging.hpp"

namespace moonmq::transport {
namespace {

using namespace move_detail;

// --- move requests between brokers ------------------------------------------------

http_response row_answer(int status, const std::string& row) { return http_response::json(status, row); }

/// The reassigner's refusal, with the owner added to a 421.
http_response move_refused(const move_context& ctx, const caf::error& e, const std::string& topic, int32_t partition) {
  auto res = error_response(e);
  if (res.status == 421) {
    auto owners = ctx.owners->get();
    auto it = owners->find(cluster::topic_partition{topic, partition});
    auto j = json::parse(res.body, nullptr, false);
    if (j.is_object() && it != owners->end())
      j["owner"] = it->second;
    res.body = j.dump();
  }
  return res;
}

// --- the operator's view ------------------------------------------------------------

/// What the admin routes learn from every broker at once.
struct cluster_survey {
  std::map<cluster::broker_id, bool> alive;
  std::map<cluster::topic_partition, cluster::partition_placement> placements;
  json moves = json::array();        ///< every broker's journal rows
  std::vector<std::string> unreachable;
};

bool unfinished(const json& row) {
  auto s = row.value("state", std::string{});
  return s != "done" && s != "failed" && s != "cancelled";
}

/// A survey for an operator's request waits at most 2 s per peer (as
/// /admin/cluster does): a frozen peer shows as unreachable instead of
/// holding the answer for a whole PeerTimeout.
std::chrono::milliseconds survey_timeout(const move_context& ctx) {
  return std::min<std::chrono::milliseconds>(ctx.peer_timeout, std::chrono::seconds(2));
}

/// Surveys /cluster/loads and /cluster/moves on every peer plus this
/// broker's own state, then calls `done` (on some thread; must not block).
void survey(const move_context& ctx, std::function<void(std::shared_ptr<cluster_survey>)> done) {
  // Three parts: the peers' loads, the peers' moves, this broker's moves.
  cluster_survey first;
  first.alive[cluster::broker_id{ctx.broker_id}] = true;
  auto in = util::fan_in<cluster_survey>::make(3, std::move(first), [done](cluster_survey& s) {
    done(std::make_shared<cluster_survey>(std::move(s)));
  });
  // This broker: partitions from its catalogue and table, moves from the reassigner.
  std::vector<cluster::partition_report> own;
  {
    auto topics = ctx.catalog->get();
    auto owners = ctx.owners->get();
    for (const auto& [name, t] : *topics)
      for (size_t p = 0; p < t.partitions.size(); ++p) {
        cluster::topic_partition tp{name, static_cast<int32_t>(p)};
        auto it = owners->find(tp);
        own.push_back({tp, cluster::broker_id{ctx.broker_id},
                       cluster::broker_id{it == owners->end() ? ctx.broker_id : it->second}});
      }
  }
  survey_peers(ctx.peers->all(), "/cluster/loads", survey_timeout(ctx),
               [in, own = std::move(own)](std::vector<peer_answer> answers) mutable {
                 in->add([&](cluster_survey& result) {
                   auto reports = std::move(own);
                   for (auto& a : answers) {
                     result.alive[cluster::broker_id{a.id}] = a.ok;
                     if (!a.ok) {
                       result.unreachable.push_back(a.id);
                       continue;
                     }
                     auto more = cluster::parse_loads(a.body);
                     reports.insert(reports.end(), more.begin(), more.end());
                   }
                   result.placements = cluster::merge_partition_reports(reports);
                 });
               });
  survey_peers(ctx.peers->all(), "/cluster/moves", survey_timeout(ctx), [in](std::vector<peer_answer> answers) {
    in->add([&](cluster_survey& result) {
      for (auto& a : answers)
        if (a.ok && a.body.contains("moves") && a.body["moves"].is_array())
          for (auto& row : a.body["moves"])
            result.moves.push_back(row);
    });
  });
  ask<std::string>(
    *ctx.system, ctx.reassigner, ctx.timeout,
    [in](std::string& rows) {
      in->add([&](cluster_survey& result) {
        auto list = json::parse(rows, nullptr, false);
        if (list.is_array())
          for (auto& row : list)
            result.moves.push_back(row);
      });
    },
    [in](const caf::error& e) {
      log::get("reassigner")->warn("reassignments.local_list_failed error=\"{}\"", caf::to_string(e));
      in->add([](cluster_survey&) {});
    },
    list_atom::value);
}

/// The controller (epoch, id) this broker acts under when it routes an
/// operator's move to another broker: its fence's, claiming the first epoch
/// of a cluster that never had a controller.
void acting_epoch(const move_context& ctx, std::function<void(int64_t, std::string)> ok, fail_fn fail) {
  ask_many<int64_t, std::string>(
    *ctx.system, ctx.state, ctx.timeout,
    [ctx, ok, fail](int64_t& epoch, std::string& holder) {
      if (epoch > 0) {
        ok(epoch, holder);
        return;
      }
      ask<int64_t>(*ctx.system, ctx.state, ctx.timeout, [ctx, ok](int64_t& claimed) { ok(claimed, ctx.broker_id); },
                   fail, claim_atom::value);
    },
    fail, get_atom::value);
}

std::optional<cluster_peer> find_peer(const move_context& ctx, const std::string& id) { return ctx.peers->find(id); }

/// The answers of one submission (POST /admin/reassignments): what each
/// accepted move's source said, gathered into one 202.
struct submit_answers {
  json accepted = json::array();
  json rejected = json::array();
  /// Moves whose source answered none of the requests to queue them: each
  /// may have been queued all the same (the answers were lost).
  json unknown = json::array();
};

/// An entry of a submission's answer for `m`, before its outcome.
json submitted_entry(const cluster::requested_move& m) {
  return json{{"topic", m.tp.topic}, {"partition", m.tp.partition}, {"replicas", json::array({m.to.value})},
              {"from", m.from.value}, {"to", m.to.value}};
}

/// Records the source's answer for `m`: its journal row (queued, or done
/// for a no-op), or the error that refused it.
void record_submitted(submit_answers& a, const cluster::requested_move& m, const json& row,
                      const std::optional<std::pair<std::string, std::string>>& error) {
  auto entry = submitted_entry(m);
  if (error) {
    entry["error"] = error->first;
    entry["message"] = error->second;
    a.rejected.push_back(entry);
    return;
  }
  entry["state"] = row.value("state", std::string{"queued"});
  if (row.contains("move_id"))
    entry["move_id"] = row["move_id"];
  a.accepted.push_back(entry);
}

void submit(const move_context& ctx, http_request& req, const responder& respond) {
  auto body = std::make_shared<std::string>(std::move(req.body));
  survey(ctx, [ctx, body, respond](std::shared_ptr<cluster_survey> s) {
    cluster::cluster_view view;
    view.brokers = s->alive;
    view.owner_of = [s](const cluster::topic_partition& tp) -> std::optional<cluster::broker_id> {
      auto it = s->placements.find(tp);
      if (it == s->placements.end())
        return std::nullopt;
      return it->second.owner;
    };
    if (ctx.owners)
      view.broker_of_node = [owners = ctx.owners](int64_t node) -> std::optional<cluster::broker_id> {
        if (node < 1 || node > 0x7fffffff)
          return std::nullopt;
        auto id = owners->broker_of_kafka_node_id(static_cast<int32_t>(node));
        if (!id)
          return std::nullopt;
        return cluster::broker_id{*id};
      };
    view.moving = [s](const cluster::topic_partition& tp) {
      for (const auto& row : s->moves)
        if (row.value("topic", std::string{}) == tp.topic && row.value("partition", -1) == tp.partition
            && unfinished(row))
          return true;
      return false;
    };
    auto outcome = cluster::parse_reassignment_request(*body, view);
    if (!outcome) {
      respond(http_response::error(400, "invalid_request", outcome.err().message));
      return;
    }
    auto out = std::make_shared<const cluster::reassignment_outcome>(std::move(outcome.value()));
    submit_answers first;
    for (const auto& r : out->rejected) {
      auto entry = r.entry;
      if (!entry.is_object())
        entry = json{{"entry", entry}};
      entry["error"] = r.error;
      entry["message"] = r.message;
      first.rejected.push_back(entry);
    }
    acting_epoch(ctx, [ctx, out, first, respond](int64_t epoch, std::string holder) {
      auto in = util::fan_in<submit_answers>::make(out->accepted.size(), first, [respond](submit_answers& a) {
        respond(http_response::json(
          202, json{{"accepted", a.accepted}, {"rejected", a.rejected}, {"unknown", a.unknown}}.dump()));
      });
      auto add = [in, out](size_t i, json row, std::optional<std::pair<std::string, std::string>> error) {
        in->add([&](submit_answers& a) { record_submitted(a, out->accepted[i], row, error); });
      };
      auto unknown = [in, out](size_t i, const transport::move_submit_outcome& o) {
        in->add([&](submit_answers& a) {
          const auto& m = out->accepted[i];
          auto entry = submitted_entry(m);
          entry["error"] = "source_no_answer";
          entry["message"] = "broker " + m.from.value + " did not say whether it queued this move ("
                             + std::to_string(o.attempts) + " tries; last: " + o.error
                             + "); it may have: see GET /admin/reassignments";
          a.unknown.push_back(std::move(entry));
        });
      };
      for (size_t i = 0; i < out->accepted.size(); ++i) {
        const auto& m = out->accepted[i];
        if (m.noop) {
          add(i, json{{"state", "done"}}, std::nullopt);
          continue;
        }
        if (m.from.value == ctx.broker_id) {
          ask<std::string>(*ctx.system, ctx.reassigner, ctx.timeout,
                           [add, i](std::string& row) { add(i, json::parse(row, nullptr, false), std::nullopt); },
                           [add, i](const caf::error& e) {
                             add(i, nullptr, std::make_pair(error_code_of(e), message_of(e)));
                           },
                           move_atom::value, m.tp.topic, m.tp.partition, m.to.value, epoch, holder,
                           std::string{"operator"}, out->reason, std::string{});
          continue;
        }
        auto peer = find_peer(ctx, m.from.value);
        if (!peer) {
          add(i, nullptr, std::make_pair(std::string{"source_not_alive"}, "broker " + m.from.value + " is not a peer"));
          continue;
        }
        cluster::move_request request{m.tp, m.to.value, "operator", out->reason, {}};
        transport::submit_move(*peer, std::move(request), epoch, holder, ctx.peer_timeout,
                               [add, unknown, i, from = m.from.value](transport::move_submit_outcome o) {
                                 if (o.status == 202) {
                                   add(i, std::move(o.body), std::nullopt);
                                   return;
                                 }
                                 if (o.unknown()) {
                                   unknown(i, o);
                                   return;
                                 }
                                 if (o.status == 0) {  // never reached it: not queued
                                   add(i, nullptr, std::make_pair(std::string{"source_not_alive"},
                                                                  "broker " + from + " could not be reached ("
                                                                    + std::to_string(o.attempts) + " tries): " + o.error));
                                   return;
                                 }
                                 auto code = transport::answer_error_code(o.body);
                                 add(i, nullptr, std::make_pair(code.empty() ? std::string{"move_refused"} : code, o.error));
                               });
      }
    }, [respond](const caf::error& e) {
      respond(http_response::error(503, "no_controller_epoch", "cannot act as controller: " + message_of(e)));
    });
  });
}

void list_reassignments(const move_context& ctx, const responder& respond) {
  survey(ctx, [ctx, respond](std::shared_ptr<cluster_survey> s) {
    std::vector<json> rows(s->moves.begin(), s->moves.end());
    // Moves of a source that did not answer are still in the metadata log
    // (without the journal's copy progress).
    if (ctx.owners) {
      auto logged = ctx.owners->moves();
      std::set<std::string> listed;
      for (auto& row : rows) {
        listed.insert(row.value("move_id", std::string{}));
        // The state the metadata log has for it (the journal may be a step
        // ahead while its entry commits).
        if (auto it = logged->find(row.value("move_id", std::string{})); it != logged->end())
          row["log_state"] = it->second.state;
      }
      for (const auto& [id, m] : *logged)
        if (!listed.count(id))
          rows.push_back(json{{"move_id", id}, {"topic", m.tp.topic}, {"partition", m.tp.partition},
                              {"from", m.from}, {"to", m.to}, {"state", m.state}, {"error", m.error},
                              {"log_state", m.state}, {"source", "metadata_log"}});
    }
    std::sort(rows.begin(), rows.end(), [](const json& a, const json& b) {
      return std::make_pair(a.value("started_ms", int64_t{0}), a.value("move_id", std::string{}))
             < std::make_pair(b.value("started_ms", int64_t{0}), b.value("move_id", std::string{}));
    });
    json out{{"reassignments", rows}};
    if (!s->unreachable.empty())
      out["unreachable"] = s->unreachable;
    respond(http_response::json(200, out.dump()));
  });
}

void cancel(const move_context& ctx, http_request& req, const responder& respond) {
  auto topic = req.params["topic"];
  const auto& raw = req.params["partition"];
  if (raw.empty() || raw.size() > 9 || raw.find_first_not_of("0123456789") != std::string::npos) {
    respond(http_response::error(400, "invalid_request", "partition must be a non-negative integer"));
    return;
  }
  auto partition = static_cast<int32_t>(std::stol(raw));
  // The move is in the metadata log whichever broker runs it: this broker's
  // reassigner cancels its own at once, and any other move by a `cancelled`
  // entry its source (or, for a fenced source, the controller) follows
  // (docs/cluster.md "Moves in the log").
  ask<std::string>(*ctx.system, ctx.reassigner, ctx.timeout,
                   [respond](std::string& row) { respond(row_answer(200, row)); }, fail_with(respond),
                   cancel_atom::value, topic, partition);
}

}  // namespace

void add_move_routes(router& r, const move_context& ctx) {
  add_move_destination_routes(r, ctx);  // api/move_destination_routes.cpp
  r.add("POST", "/cluster/moves", [ctx](http_request& req, responder respond) {
    json body;
    if (!object_body(req, respond, body))
      return;
    auto m = cluster::move_request_from_json(body);
    if (!m) {
      respond(http_response::error(400, "invalid_request", m.err().message));
      return;
    }
    with_fence(*ctx.system, ctx.state, ctx.timeout, req, respond,
               [ctx, respond, m = std::move(m.value())](int64_t at, const std::string& controller) {
                 ask<std::string>(*ctx.system, ctx.reassigner, ctx.timeout,
                                  [respond](std::string& row) { respond(row_answer(202, row)); },
                                  [ctx, respond, tp = m.tp](const caf::error& e) {
                                    respond(move_refused(ctx, e, tp.topic, tp.partition));
                                  },
                                  move_atom::value, m.tp.topic, m.tp.partition, m.to, at, controller, m.origin,
                                  m.reason, m.submission);
               });
  });
  r.add("GET", "/cluster/moves", [ctx](http_request&, responder respond) {
    ask<std::string>(*ctx.system, ctx.reassigner, ctx.timeout,
                     [ctx, respond](std::string& rows) {
                       respond(http_response::json(200, json{{"broker_id", ctx.broker_id},
                                                             {"moves", json::parse(rows, nullptr, false)}}.dump()));
                     },
                     fail_with(respond), list_atom::value);
  });
  r.add("DELETE", "/cluster/moves/{topic}/{partition}", [ctx](http_request& req, responder respond) {
    auto topic = req.params["topic"];
    const auto& raw = req.params["partition"];
    if (raw.empty() || raw.size() > 9 || raw.find_first_not_of("0123456789") != std::string::npos) {
      respond(http_response::error(400, "invalid_request", "partition must be a non-negative integer"));
      return;
    }
    auto partition = static_cast<int32_t>(std::stol(raw));
    with_fence(*ctx.system, ctx.state, ctx.timeout, req, respond,
               [ctx, respond, topic, partition](int64_t, const std::string&) {
                 ask<std::string>(*ctx.system, ctx.reassigner, ctx.timeout,
                                  [respond](std::string& row) { respond(row_answer(200, row)); }, fail_with(respond),
                                  cancel_atom::value, topic, partition);
               });
  });
}

void add_reassignment_routes(router& r, const move_context& ctx) {
  r.add("POST", "/admin/reassignments", [ctx](http_request& req, responder respond) { submit(ctx, req, respond); });
  r.add("GET", "/admin/reassignments", [ctx](http_request&, responder respond) { list_reassignments(ctx, respond); });
  r.add("DELETE", "/admin/reassignments/{topic}/{partition}",
        [ctx](http_request& req, responder respond) { cancel(ctx, req, respond); });
}

}  // namespace moonmq::transport
