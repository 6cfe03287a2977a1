// Consumer group administration (docs/groups.md "Administration"): list
// every group of the cluster, describe one with its members, committed
// offsets and lag, delete one. HTTP groups (the group actor) and Kafka
// groups (its Kafka membership) are both shown; each
// group's membership lives on its coordinator, its committed offsets with
// each partition's owner, and the log end offsets with the owners too.

#include <algorithm>
#include <map>
#include <mutex>
#include <set>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/ask.hpp"
#include "actors/errors.hpp"
#include "groups/group_state.hpp"
#include "kafka/wire.hpp"
#include "api/actor_answers.hpp"
#include "api/group_routes.hpp"
#include "net/http_client.hpp"
#include "api/kafka_groups.hpp"
#include "api/partition_bounds.hpp"

namespace moonmq::transport {
namespace {

using json = nlohmann::json;

/// The partitions of a Kafka consumer-protocol assignment (version int16,
/// [topic string, [partition int32]], user data; Kafka's
/// ConsumerProtocolAssignment); empty when it does not parse.
json consumer_assignment(const std::string& bytes) {
  kafka::reader r{bytes};
  int16_t version = 0;
  json out = json::array();
  std::vector<std::pair<std::string, std::vector<int32_t>>> topics;
  auto partition = [&](int32_t& p) { return r.i32(p); };
  auto topic = [&](std::pair<std::string, std::vector<int32_t>>& t) {
    return r.string(t.first) && r.array(t.second, partition);
  };
  if (bytes.empty() || !r.i16(version) || !r.array(topics, topic))
    return out;
  for (const auto& [name, parts] : topics)
    for (auto p : parts)
      out.push_back(json{{"topic", name}, {"partition", p}});
  return out;
}

/// This broker's membership of `group` (it coordinates it): Kafka's when
/// the group actor's Kafka membership knows the group, else its HTTP one.
void local_membership(const client_context& ctx, const std::string& group, std::function<void(json)> done) {
  auto http = [ctx, group, done] {
    ask<std::string>(
      *ctx.system, ctx.groups, ctx.timeout,
      [done](std::string& text) {
        auto j = json::parse(text, nullptr, false);
        if (!j.is_object())
          j = json{{"state", "Dead"}, {"members", json::array()}};
        j["protocol"] = "http";
        done(std::move(j));
      },
      [done](const caf::error& e) { done(json{{"error", error_code_of(e)}}); }, status_atom::value, group);
  };
  ask<kafka::described_group>(
    *ctx.system, ctx.groups, ctx.timeout,
    [done, http](kafka::described_group& d) {
      if (d.group_state == "Dead") {
        http();
        return;
      }
      json members = json::array();
      for (const auto& m : d.members)
        members.push_back(json{{"member_id", m.member_id},
                               // KIP-345: the static member's instance id, null for a dynamic member
                               {"group_instance_id", m.group_instance_id ? json(*m.group_instance_id) : json()},
                               {"client_id", m.client_id},
                               {"host", m.client_host},
                               {"assignment", consumer_assignment(m.member_assignment)}});
      done(json{{"protocol", "kafka"}, {"state", d.group_state}, {"members", members}});
    },
    [done](const caf::error& e) { done(json{{"error", error_code_of(e)}}); }, kafka_group_atom::value,
    status_atom::value, group);
}

/// The groups this broker coordinates and those it holds offsets of:
/// GET /cluster/groups.
void local_groups(const client_context& ctx, std::function<void(json)> done) {
  auto fail = [done](const caf::error& e) { done(json{{"error", error_code_of(e)}}); };
  ask<std::string>(
    *ctx.system, ctx.groups, ctx.timeout,
    [ctx, done, fail](std::string& text) {
      auto j = json::parse(text, nullptr, false);
      auto groups = std::make_shared<json>(json::array());
      json committed = json::array();
      if (j.is_object()) {
        for (auto g : j.value("groups", json::array())) {
          g["protocol"] = "http";
          groups->push_back(std::move(g));
        }
        committed = j.value("committed", json::array());
      }
      ask<std::vector<kafka::described_group>>(
        *ctx.system, ctx.groups, ctx.timeout,
        [ctx, done, groups, committed](std::vector<kafka::described_group>& kafka_groups) {
          for (const auto& d : kafka_groups)
            groups->push_back(json{{"group", d.group_id},
                                   {"protocol", "kafka"},
                                   {"state", d.group_state},
                                   {"members", d.members.size()}});
          done(json{{"broker", ctx.broker_id}, {"groups", std::move(*groups)}, {"committed", committed}});
        },
        fail, kafka_group_atom::value, status_atom::value);
    },
    fail, list_atom::value);
}

/// GET /v1/groups: every broker's report merged. A group's row comes from
/// its coordinator's membership (or, when none reports it, from any broker
/// that does); groups known only by committed offsets are Empty. Brokers
/// that did not answer are listed in "unreachable".
void list_groups(const client_context& ctx, const responder& respond) {
  auto peers = ctx.peers->all();
  local_groups(ctx, [ctx, peers, respond](json mine) {
    survey_peers(peers, "/cluster/groups", ctx.timeout, [ctx, mine, respond](std::vector<peer_answer> answers) {
      std::vector<json> reports{mine};
      json unreachable = json::array();
      if (mine.contains("error"))
        unreachable.push_back(ctx.broker_id);  // this broker's own group actor did not answer
      for (auto& a : answers) {
        if (a.ok && a.body.is_object())
          reports.push_back(std::move(a.body));
        else
          unreachable.push_back(a.id);
      }
      std::map<std::string, json> rows;
      for (const auto& r : reports) {
        for (const auto& g : r.value("groups", json::array())) {
          auto id = g.value("group", std::string{});
          auto coordinator = group_coordinator_of(ctx, id);
          auto& row = rows[id];
          if (!row.is_null() && row["coordinator"] == coordinator && r.value("broker", "") != coordinator)
            continue;  // the coordinator's own report wins
          row = json{{"group", id},
                     {"coordinator", coordinator},
                     {"protocol", g.value("protocol", "http")},
                     {"state", g.value("state", "Empty")},
                     {"members", g.value("members", 0)}};
        }
      }
      for (const auto& r : reports)
        for (const auto& id : r.value("committed", json::array()))
          if (id.is_string() && !rows.count(id.get<std::string>()))
            rows[id.get<std::string>()] = json{{"group", id},
                                               {"coordinator", group_coordinator_of(ctx, id.get<std::string>())},
                                               {"protocol", nullptr},
                                               {"state", "Empty"},
                                               {"members", 0}};
      json list = json::array();
      for (auto& [id, row] : rows)
        list.push_back(std::move(row));
      respond(http_response::json(200, json{{"groups", list}, {"unreachable", unreachable}}.dump()));
    });
  });
}

/// The membership of `group` from its coordinator (this broker, or GET
/// /cluster/groups/{g} on it).
void membership(const client_context& ctx, const std::string& group, const std::string& coordinator,
                std::function<void(json)> done) {
  if (coordinator == ctx.broker_id) {
    local_membership(ctx, group, std::move(done));
    return;
  }
  auto peer = ctx.peers->find(coordinator);
  if (!peer || !peer->client) {
    done(json{{"error", "coordinator_unavailable"}});
    return;
  }
  call_peer(*peer, "GET", "/cluster/groups/" + group, {}, 0, {}, ctx.timeout,
            [done](int status, json body, std::string) {
              done(status == 200 && body.is_object() ? std::move(body) : json{{"error", "coordinator_unavailable"}});
            });
}

/// GET /v1/groups/{g}: membership, committed offsets, and lag per partition
/// (log end offset - committed offset, never below 0; null when the owner
/// did not answer) and in total.
void describe_group(const client_context& ctx, http_request& req, const responder& respond) {
  auto group = req.params["group"];
  if (auto v = groups::validate_group_id(group); !v) {
    respond(http_response::error(400, "invalid_group_id", v.err().message));
    return;
  }
  auto coordinator = group_coordinator_of(ctx, group);
  membership(ctx, group, coordinator, [ctx, group, coordinator, respond](json members) {
    gather_committed_offsets(ctx, group, "", [ctx, group, coordinator, members, respond](int status,
                                                                                         std::string body) {
      auto committed = json::parse(body, nullptr, false);
      if (status != 200 && status != 404) {
        respond(http_response::json(status, body));
        return;
      }
      auto offsets = status == 200 && committed.is_object() ? committed.value("offsets", json::array()) : json::array();
      auto dead = members.value("state", std::string{"Dead"}) == "Dead" && !members.contains("error");
      if (status == 404 && dead) {
        respond(http_response::error(404, "unknown_group", "no broker knows group " + group));
        return;
      }
      std::vector<cluster::topic_partition> parts;
      for (const auto& o : offsets)
        parts.push_back({o["topic"].get<std::string>(), o["partition"].get<int32_t>()});
      gather_bounds(ctx, parts, [group, coordinator, members, offsets, respond](std::vector<partition_bounds> bounds) {
        json rows = json::array();
        int64_t total = 0;
        bool complete = true;
        for (size_t i = 0; i < bounds.size(); ++i) {
          json row = offsets[i];
          if (bounds[i].error.empty()) {
            auto lag = std::max<int64_t>(0, bounds[i].log_end_offset - row["offset"].get<int64_t>());
            row["log_end_offset"] = bounds[i].log_end_offset;
            row["lag"] = lag;
            total += lag;
          } else {
            row["log_end_offset"] = nullptr;
            row["lag"] = nullptr;
            row["error"] = bounds[i].error;
            complete = false;
          }
          rows.push_back(std::move(row));
        }
        // A group known only by committed offsets is Empty, as GET
        // /v1/groups and Kafka's ListGroups/DescribeGroups show it.
        // A coordinator that did not answer says nothing of the members:
        // the group stays Dead beside the membership_error.
        auto state = members.value("state", std::string{"Dead"});
        const bool offset_only = state == "Dead" && !members.contains("error") && !offsets.empty();
        if (offset_only)
          state = "Empty";
        json answer{{"group", group},
                    {"coordinator", coordinator},
                    {"protocol", offset_only ? json(nullptr) : members.value("protocol", json(nullptr))},
                    {"state", state},
                    {"members", members.value("members", json::array())},
                    {"offsets", rows},
                    {"lag", total},
                    {"lag_complete", complete}};
        if (members.contains("generation") && !offset_only)
          answer["generation"] = members["generation"];
        if (members.contains("error"))
          answer["membership_error"] = members["error"];
        respond(http_response::json(200, answer.dump()));
      });
    });
  });
}

/// A deletion's outcome as HTTP.
http_response deletion_answer(const std::string& group, group_deletion d) {
  switch (d) {
    case group_deletion::deleted:
      return http_response::json(200, json{{"group", group}, {"deleted", true}}.dump());
    case group_deletion::not_found:
      return http_response::error(404, "unknown_group", "no broker holds anything of group " + group);
    case group_deletion::non_empty:
      return http_response::error(409, "group_not_empty",
                                  "group " + group + " has members; they must leave (or expire) first");
    case group_deletion::unavailable:
      break;
  }
  return http_response::error(503, "broker_unavailable",
                              "a broker did not answer while group " + group + " was deleted; delete it again");
}

void delete_here(const client_context& ctx, const std::string& group, const responder& respond) {
  delete_group_everywhere(*ctx.system, ctx.groups, ctx.peers->all(), ctx.timeout, group,
                          [respond, group](group_deletion d) { respond(deletion_answer(group, d)); });
}

/// DELETE /v1/groups/{g}: run by the group's coordinator (forwarded there
/// as DELETE /cluster/groups/{g}), whose membership decides "not empty".
void delete_group(const client_context& ctx, http_request& req, const responder& respond) {
  auto group = req.params["group"];
  if (auto v = groups::validate_group_id(group); !v) {
    respond(http_response::error(400, "invalid_group_id", v.err().message));
    return;
  }
  auto coordinator = group_coordinator_of(ctx, group);
  if (coordinator == ctx.broker_id) {
    delete_here(ctx, group, respond);
    return;
  }
  auto peer = ctx.peers->find(coordinator);
  if (!peer || !peer->client) {
    respond(http_response::error(503, "coordinator_unavailable", "group coordinator " + coordinator
                                                                    + " is not a known peer"));
    return;
  }
  call_peer(*peer, "DELETE", "/cluster/groups/" + group, {}, 0, {}, ctx.timeout,
            [respond, coordinator](int status, json body, std::string error) {
              if (status == 0)
                respond(http_response::error(503, "coordinator_unavailable",
                                             "group coordinator " + coordinator + " did not answer: " + error));
              else
                respond(http_response::json(status, body.dump()));
            });
}

}  // namespace

void delete_group_everywhere(caf::actor_system& sys, const group_actor& groups, std::vector<cluster_peer> peers,
                             std::chrono::milliseconds timeout, const std::string& group,
                             std::function<void(group_deletion)> done) {
  peers.erase(std::remove_if(peers.begin(), peers.end(), [](const cluster_peer& p) { return !p.client; }),
              peers.end());
  // This broker first: its group actor refuses while HTTP or Kafka members are in
  // the group, and only then do the other brokers delete their offsets (a
  // refused deletion deletes nothing anywhere).
  auto spread = [peers, timeout, group, done](bool held_here) {
    struct tally {
      std::mutex mtx;
      bool held = false;
      bool failed = false;
      size_t left = 0;
    };
    auto t = std::make_shared<tally>();
    t->held = held_here;
    t->left = peers.size();
    if (peers.empty()) {
      done(t->held ? group_deletion::deleted : group_deletion::not_found);
      return;
    }
    for (const auto& p : peers)
      call_peer(p, "DELETE", "/cluster/groups/" + group + "/offsets", {}, 0, {}, timeout,
                [t, done](int status, json body, std::string) {
                  std::unique_lock<std::mutex> lock{t->mtx};
                  if (status == 200 && body.is_object())
                    t->held = t->held || body.value("deleted", false);
                  else
                    t->failed = true;
                  if (--t->left != 0)
                    return;
                  auto outcome = t->failed ? group_deletion::unavailable
                                 : t->held ? group_deletion::deleted
                                           : group_deletion::not_found;
                  lock.unlock();
                  done(outcome);
                });
  };
  ask<bool>(
    sys, groups, timeout, [spread](bool& held) { spread(held); },
    [done](const caf::error& e) {
      done(error_code_of(e) == "non_empty_group" ? group_deletion::non_empty : group_deletion::unavailable);
    },
    delete_atom::value, group);
}

void delete_offsets_everywhere(caf::actor_system& sys, const group_actor& groups, std::vector<cluster_peer> peers,
                               std::chrono::milliseconds timeout, const std::string& group, const std::string& topic,
                               std::vector<int32_t> partitions, std::function<void(bool, bool)> done) {
  struct tally {
    std::mutex mtx;
    bool ok = true;
    bool held = false;
    size_t left = 0;
  };
  auto t = std::make_shared<tally>();
  peers.erase(std::remove_if(peers.begin(), peers.end(), [](const cluster_peer& p) { return !p.client; }),
              peers.end());
  t->left = peers.size() + 1;
  auto note = [t, done](bool ok, bool held) {
    std::unique_lock<std::mutex> lock{t->mtx};
    t->ok = t->ok && ok;
    t->held = t->held || held;
    if (--t->left != 0)
      return;
    lock.unlock();
    done(t->ok, t->held);
  };
  ask<int32_t>(
    sys, groups, timeout, [note](int32_t& n) { note(true, n >= 0); }, [note](const caf::error&) { note(false, false); },
    delete_atom::value, group, topic, partitions);
  const auto body = json{{"partitions", partitions}}.dump();
  for (const auto& p : peers)
    call_peer(p, "DELETE", "/cluster/groups/" + group + "/offsets/" + topic, body, 0, {}, timeout,
              [note](int status, json answer, std::string) {
                bool ok = status == 200 && answer.is_object();
                note(ok, ok && answer.value("held", false));
              });
}

void add_group_admin_routes(router& r, const client_context& ctx) {
  r.add("GET", "/v1/groups", [ctx](http_request&, responder respond) { list_groups(ctx, respond); });
  r.add("GET", "/v1/groups/{group}", [ctx](http_request& req, responder respond) { describe_group(ctx, req, respond); });
  r.add("DELETE", "/v1/groups/{group}",
        [ctx](http_request& req, responder respond) { delete_group(ctx, req, respond); });
}

void add_cluster_group_admin_routes(router& r, const client_context& ctx) {
  // This broker's groups: coordinated here (HTTP and Kafka) and committed here.
  r.add("GET", "/cluster/groups", [ctx](http_request&, responder respond) {
    local_groups(ctx, [respond](json j) {
      respond(http_response::json(j.contains("error") ? 503 : 200, j.dump()));
    });
  });
  // A group's membership on its coordinator.
  r.add("GET", "/cluster/groups/{group}", [ctx](http_request& req, responder respond) {
    local_membership(ctx, req.params["group"], [respond](json j) {
      respond(http_response::json(j.contains("error") ? 503 : 200, j.dump()));
    });
  });
  // This broker's part of a Kafka OffsetDelete: body {"partitions":[...]}
  // of the topic in the path; {"removed":n,"held":bool} (held: this broker
  // stores offsets of the group at all).
  r.add("DELETE", "/cluster/groups/{group}/offsets/{topic}", [ctx](http_request& req, responder respond) {
    auto body = json::parse(req.body, nullptr, false);
    std::vector<int32_t> partitions;
    if (body.is_object() && body.contains("partitions") && body["partitions"].is_array())
      for (const auto& p : body["partitions"])
        if (p.is_number_integer())
          partitions.push_back(p.get<int32_t>());
    if (partitions.empty()) {
      respond(http_response::error(400, "invalid_request", "body must be {\"partitions\":[<partition>...]}"));
      return;
    }
    ask<int32_t>(
      *ctx.system, ctx.groups, ctx.timeout,
      [respond](int32_t& n) {
        respond(http_response::json(200, json{{"removed", std::max(0, n)}, {"held", n >= 0}}.dump()));
      },
      fail_with(respond),
      delete_atom::value, req.params["group"], req.params["topic"], std::move(partitions));
  });
  // A deletion forwarded to the coordinator (DELETE /v1/groups/{g}).
  r.add("DELETE", "/cluster/groups/{group}", [ctx](http_request& req, responder respond) {
    auto group = req.params["group"];
    if (auto v = groups::validate_group_id(group); !v) {
      respond(http_response::error(400, "invalid_group_id", v.err().message));
      return;
    }
    delete_here(ctx, group, respond);
  });
}

}  // namespace moonmq::transport
