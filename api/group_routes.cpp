#include "api/group_routes.hpp"

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "actors/ask.hpp"
#include "actors/session_probe.hpp"
#include "cluster/group_placement.hpp"
#include "cluster/types.hpp"
#include "groups/types.hpp"
#include "api/actor_answers.hpp"
#include "net/http_client.hpp"
#include "peers/peer_survey.hpp"
#include "util/fan_in.hpp"
#include "util/names.hpp"

namespace moonmq::transport {
namespace {

using json = nlohmann::json;
using std::chrono::milliseconds;

// --- where things are ----------------------------------------------------------

bool clustered(const client_context& ctx) { return ctx.owners != nullptr; }

bool valid_group_id_quiet(const std::string& group) { return groups::is_valid_group_id(group); }

/// A member id that is safe in a forwarded request's path (generated ids
/// are `m-<n>-<hex>`); others are answered locally (unknown_member).
bool valid_member_quiet(const std::string& member) {
  return util::is_name(member, 1, 256);
}

std::string coordinator_of(const client_context& ctx, const std::string& group) {
  if (!clustered(ctx))
    return ctx.broker_id;
  // Over the brokers the metadata log has not fenced (see kafka_handlers.cpp).
  auto brokers = group_brokers(ctx);
  return cluster::group_coordinator(group, ctx.owners ? ctx.owners->unfenced(std::move(brokers)) : brokers);
}

/// A broker's client URL ("http://host:port"); "" when unknown.
std::string url_of(const client_context& ctx, const std::string& broker) {
  if (broker == ctx.broker_id) {
    auto port = ctx.client_port ? ctx.client_port->load() : uint16_t{0};
    return port ? "http://" + ctx.client_host + ":" + std::to_string(port) : std::string{};
  }
  auto p = ctx.peers->find(broker);
  return p && !p->client_address.empty() ? "http://" + p->client_address : std::string{};
}

/// Is (topic, partition) held and owned here?
bool owned_here(const client_context& ctx, const std::string& topic, int32_t partition) {
  auto topics = ctx.catalog->get();
  auto t = topics->find(topic);
  return t != topics->end() && partition >= 0 && static_cast<size_t>(partition) < t->second.partitions.size()
         && !remote_owner(ctx, topic, partition);
}

std::vector<cluster_peer> peer_list(const client_context& ctx) { return ctx.peers->all(); }

// --- small plumbing ---------------------------------------------------------------

bool parse_json(const http_request& req, const responder& respond, json& out) {
  out = json::parse(req.body.empty() ? std::string("{}") : req.body, nullptr, false);
  if (out.is_discarded() || !out.is_object()) {
    respond(http_response::error(400, "malformed_json", "the request body is not a JSON object"));
    return false;
  }
  return true;
}

bool valid_group(const std::string& group, const responder& respond) {
  if (auto v = groups::validate_group_id(group); !v) {
    respond(http_response::error(400, "invalid_group_id", v.err().message));
    return false;
  }
  return true;
}

/// One answer of a fan-out: HTTP status (0 = unreachable) and raw body.
struct reply {
  std::string broker;
  int status = 0;
  std::string body;
  std::string error;
};

/// One reply per part, in part order; `done` once all are in.
using replies_in = util::fan_in<std::vector<reply>>;

/// The callback that stores part `index`'s reply in `in`.
std::function<void(reply)> part_of(const std::shared_ptr<replies_in>& in, size_t index) {
  return [in, index](reply r) { in->add([&](std::vector<reply>& all) { all[index] = std::move(r); }); };
}

/// One request to a peer's cluster listener (token set); `done` gets the
/// reply with status 0 when the peer could not be reached.
void ask_peer(const client_context& ctx, const std::string& broker, const std::string& method,
                  const std::string& target, std::string body, std::function<void(reply)> done) {
  auto peer = ctx.peers->find(broker);
  if (!peer || !peer->client) {
    done(reply{broker, 0, {}, "broker " + broker + " is not a known peer"});
    return;
  }
  peer_request req;
  req.method = method;
  req.target = target;
  req.body = std::move(body);
  if (!peer->token.empty())
    req.headers.emplace_back("X-Cluster-Token", peer->token);
  req.timeout = ctx.timeout;
  peer->client->request(std::move(req), [broker, done](peer_result res) {
    if (!res.ok())
      done(reply{broker, 0, {}, res.error_message});
    else
      done(reply{broker, res.status, std::move(res.body), {}});
  });
}

/// Answers a reply as it is (status and body).
std::function<void(reply)> relay_to(const responder& respond) {
  return [respond](reply r) { respond(http_response::json(r.status, std::move(r.body))); };
}

/// A local actor answer as a reply.
std::function<void(const caf::error&)> failed_into(std::function<void(reply)> done, std::string broker) {
  return [done, broker](const caf::error& e) {
    auto r = error_response(e);
    done(reply{broker, r.status, r.body, {}});
  };
}

// --- membership ----------------------------------------------------------------

/// Adds "coordinator", "coordinator_url" and "recommended_url" to a join or
/// heartbeat answer of the local coordinator, then answers 200.
void decorate(const client_context& ctx, const std::string& client, std::string& body, const responder& respond) {
  auto j = json::parse(body, nullptr, false);
  if (!j.is_object()) {  // cannot happen: the group actor answers JSON objects
    respond(http_response::json(200, std::move(body)));
    return;
  }
  j["coordinator"] = ctx.broker_id;
  auto own = url_of(ctx, ctx.broker_id);
  j["coordinator_url"] = own.empty() ? json(nullptr) : json(own);
  j["recommended_url"] = j["coordinator_url"];
  if (!ctx.meter) {
    respond(http_response::json(200, j.dump()));
    return;
  }
  auto who = client.empty() ? j.value("member_id", std::string{"member"}) : client;
  ask_many<int32_t, std::string>(
    *ctx.system, *ctx.meter, ctx.timeout,
    [respond, j](int32_t& status, std::string& rec) mutable {
      auto r = json::parse(rec, nullptr, false);
      if (status == 200 && r.is_object() && r.contains("url") && r["url"].is_string())
        j["recommended_url"] = r["url"];
      respond(http_response::json(200, j.dump()));
    },
    [respond, j](const caf::error&) { respond(http_response::json(200, j.dump())); }, recommend_atom::value, who,
    std::string{}, std::vector<std::string>{});
}

struct join_request {
  std::string group;
  std::string member;
  std::string client;
  std::vector<std::string> topics;
  json counts = json::object();  ///< topic → partition count known by the forwarding broker
};

/// Runs a join on this broker's group actor. Topics whose partition count
/// neither this broker nor the forwarding one knows are looked up in every
/// peer's GET /cluster/loads first ("topics"); a topic nobody knows stays
/// unknown and the join answers 404 unknown_topic as on a single broker.
void local_join(const client_context& ctx, std::shared_ptr<join_request> jr, responder respond) {
  auto run = [ctx, jr, respond] {
    ask<std::string>(
      *ctx.system, ctx.groups, ctx.timeout,
      [ctx, jr, respond](std::string& body) { decorate(ctx, jr->client, body, respond); }, fail_with(respond),
      join_atom::value, jr->group, jr->member, jr->topics, jr->counts.dump());
  };
  std::vector<std::string> missing;
  auto topics = ctx.catalog->get();
  for (const auto& t : jr->topics)
    if (!topics->count(t) && !jr->counts.contains(t))
      missing.push_back(t);
  if (missing.empty() || ctx.peers->empty()) {
    run();
    return;
  }
  survey_peers(peer_list(ctx), "/cluster/loads", ctx.timeout, [jr, missing, run](std::vector<peer_answer> answers) {
    for (const auto& a : answers) {
      if (!a.ok || !a.body.contains("topics") || !a.body["topics"].is_array())
        continue;
      for (const auto& t : a.body["topics"]) {
        if (!t.is_object() || !t.contains("name") || !t["name"].is_string() || !t.contains("partitions")
            || !t["partitions"].is_number_integer())
          continue;
        auto name = t["name"].get<std::string>();
        if (std::find(missing.begin(), missing.end(), name) == missing.end())
          continue;
        auto n = t["partitions"].get<int64_t>();
        if (!jr->counts.contains(name) || jr->counts[name].get<int64_t>() < n)
          jr->counts[name] = n;
      }
    }
    run();
  });
}

void local_beat(const client_context& ctx, const std::string& group, const std::string& member,
                const std::string& client, responder respond) {
  ask<std::string>(
    *ctx.system, ctx.groups, ctx.timeout,
    [ctx, client, respond](std::string& body) { decorate(ctx, client, body, respond); }, fail_with(respond),
    beat_atom::value, group, member);
}

void local_leave(const client_context& ctx, const std::string& group, const std::string& member,
                 responder respond) {
  ask<bool>(
    *ctx.system, ctx.groups, ctx.timeout, [respond](bool&) { respond(http_response::json(200, "{}")); },
    fail_with(respond), leave_atom::value, group, member);
}

/// Sends a membership request to the group's coordinator and relays its
/// answer unchanged; 503 coordinator_unavailable when it cannot be reached.
/// `on_ok` sees a 200 answer first (session metering, generation fence).
void to_coordinator(const client_context& ctx, const std::string& group, const std::string& coordinator,
                    const std::string& method, const std::string& target, std::string body, responder respond,
                    std::function<void(const json&)> on_ok) {
  ask_peer(ctx, coordinator, method, target, std::move(body),
               [ctx, group, coordinator, respond, on_ok](reply r) {
                 if (r.status == 0) {
                   json j{{"error", "coordinator_unavailable"},
                          {"coordinator", coordinator},
                          {"url", url_of(ctx, coordinator)},
                          {"message", "the coordinator of group " + group + ", broker " + coordinator
                                        + ", cannot be reached (" + r.error + "); retry later"}};
                   respond(http_response::json(503, j.dump()));
                   return;
                 }
                 if (r.status == 200 && on_ok) {
                   auto j = json::parse(r.body, nullptr, false);
                   if (j.is_object())
                     on_ok(j);
                 }
                 respond(http_response::json(r.status, std::move(r.body)));
               });
}

/// What a relayed join/heartbeat answer teaches this broker: the member's
/// session (metering) and the group's generation (owner commit fence).
std::function<void(const json&)> learn_member(const client_context& ctx, const std::string& group,
                                              const std::string& client) {
  return [ctx, group, client](const json& j) {
    if (ctx.sessions && j.contains("member_id") && j["member_id"].is_string())
      ctx.sessions->member_seen(group, j["member_id"].get<std::string>(), client);
    if (j.contains("generation") && j["generation"].is_number_integer())
      caf::anon_send(ctx.groups, observe_atom::value, group, j["generation"].get<int32_t>());
  };
}

/// A responder that also meters a local join/heartbeat answer.
responder metered(const client_context& ctx, const std::string& group, const std::string& client,
                  responder respond) {
  auto learn = learn_member(ctx, group, client);
  return [respond, learn](http_response r) {
    if (r.status == 200) {
      auto j = json::parse(r.body, nullptr, false);
      if (j.is_object())
        learn(j);
    }
    respond(std::move(r));
  };
}

/// Reads {"member_id"?,"topics":[...]} into `jr`; answers 400 otherwise.
bool read_join(const json& body, join_request& jr, const responder& respond) {
  if (!body.contains("topics") || !body["topics"].is_array()) {
    respond(http_response::error(400, "invalid_request", "body must be {\"topics\":[...],\"member_id\"?:...}"));
    return false;
  }
  for (const auto& t : body["topics"]) {
    if (!t.is_string()) {
      respond(http_response::error(400, "invalid_request", "topics must be strings"));
      return false;
    }
    jr.topics.push_back(t.get<std::string>());
  }
  if (body.contains("member_id") && body["member_id"].is_string())
    jr.member = body["member_id"].get<std::string>();
  return true;
}

void join_group(const client_context& ctx, http_request& req, const responder& respond) {
  json body;
  if (!parse_json(req, respond, body))
    return;
  auto jr = std::make_shared<join_request>();
  jr->group = req.params["group"];
  if (!read_join(body, *jr, respond) || !session_client(req, respond, jr->client))
    return;
  auto coordinator = coordinator_of(ctx, jr->group);
  auto answer = metered(ctx, jr->group, jr->client, respond);
  if (coordinator == ctx.broker_id || !valid_group_id_quiet(jr->group)) {
    local_join(ctx, jr, answer);  // an invalid id gets the group actor's 400 here
    return;
  }
  // The partition counts this broker knows travel with the request, so the
  // coordinator can assign partitions of topics it does not hold.
  auto topics = ctx.catalog->get();
  for (const auto& t : jr->topics)
    if (auto it = topics->find(t); it != topics->end())
      jr->counts[t] = it->second.partitions.size();
  json fwd{{"topics", jr->topics}, {"partitions", jr->counts}, {"client_id", jr->client}};
  if (!jr->member.empty())
    fwd["member_id"] = jr->member;
  to_coordinator(ctx, jr->group, coordinator, "POST", "/cluster/groups/" + jr->group + "/members", fwd.dump(),
                 respond, learn_member(ctx, jr->group, jr->client));
}

void heartbeat(const client_context& ctx, http_request& req, const responder& respond) {
  std::string client;
  if (!session_client(req, respond, client))
    return;
  auto group = req.params["group"];
  auto member = req.params["member"];
  auto coordinator = coordinator_of(ctx, group);
  if (coordinator == ctx.broker_id || !valid_group_id_quiet(group) || !valid_member_quiet(member)) {
    local_beat(ctx, group, member, client, metered(ctx, group, client, respond));
    return;
  }
  to_coordinator(ctx, group, coordinator, "POST", "/cluster/groups/" + group + "/members/" + member + "/heartbeat",
                 json{{"client_id", client}}.dump(), respond, learn_member(ctx, group, client));
}

void leave(const client_context& ctx, http_request& req, const responder& respond) {
  auto group = req.params["group"];
  auto member = req.params["member"];
  responder answer = [respond, sessions = ctx.sessions, group, member](http_response r) {
    if (r.status == 200 && sessions)
      sessions->member_left(group, member);
    respond(std::move(r));
  };
  auto coordinator = coordinator_of(ctx, group);
  if (coordinator == ctx.broker_id || !valid_group_id_quiet(group) || !valid_member_quiet(member)) {
    local_leave(ctx, group, member, answer);
    return;
  }
  to_coordinator(ctx, group, coordinator, "DELETE", "/cluster/groups/" + group + "/members/" + member, {}, answer,
                 nullptr);
}

// --- committed offsets ---------------------------------------------------------

struct commit_request {
  std::string group;
  json offsets = json::array();
  int32_t generation = -1;  ///< -1 = none
  std::string member;
};

/// Reads {"offsets":[{"topic","partition","offset","metadata"?}],"generation"?,
/// "member_id"?}; answers 400 otherwise (metadata: a string of at most
/// groups::max_offset_metadata_bytes, checked here so that no owner stores
/// part of a commit another refuses).
bool read_commit(const json& body, commit_request& c, const responder& respond) {
  if (!body.contains("offsets") || !body["offsets"].is_array() || body["offsets"].empty()) {
    respond(http_response::error(400, "invalid_request",
                                 "body must be {\"offsets\":[{\"topic\",\"partition\",\"offset\"}]} with at least "
                                 "one entry"));
    return false;
  }
  for (size_t i = 0; i < body["offsets"].size(); ++i) {
    const auto& o = body["offsets"][i];
    if (!o.is_object() || !o.contains("topic") || !o["topic"].is_string() || !o.contains("partition")
        || !o["partition"].is_number_integer() || !o.contains("offset") || !o["offset"].is_number_integer()) {
      respond(http_response::error(400, "invalid_request", "offsets[" + std::to_string(i)
                                                             + "]: expected {\"topic\",\"partition\",\"offset\"}"));
      return false;
    }
    if (o.contains("metadata") && !o["metadata"].is_null()) {
      if (!o["metadata"].is_string()) {
        respond(http_response::error(400, "invalid_request",
                                     "offsets[" + std::to_string(i) + "].metadata: must be a string"));
        return false;
      }
      if (o["metadata"].get_ref<const std::string&>().size() > groups::max_offset_metadata_bytes) {
        respond(http_response::error(400, "offset_metadata_too_large",
                                     "offsets[" + std::to_string(i) + "].metadata: more than "
                                       + std::to_string(groups::max_offset_metadata_bytes) + " bytes"));
        return false;
      }
    }
  }
  c.offsets = body["offsets"];
  if (body.contains("generation") && !body["generation"].is_null()) {
    if (!body["generation"].is_number_integer() || body["generation"].get<int64_t>() < 0
        || body["generation"].get<int64_t>() > INT32_MAX) {
      respond(http_response::error(400, "invalid_request", "generation must be a non-negative integer"));
      return false;
    }
    c.generation = body["generation"].get<int32_t>();
  }
  if (body.contains("member_id") && body["member_id"].is_string())
    c.member = body["member_id"].get<std::string>();
  return true;
}

/// Stores a commit in this broker's offset store. On the group's
/// coordinator the live group fences it (member and exact generation, as on
/// a single broker); on any other owner the newest generation seen here
/// does (409 stale_generation when older).
void store_local(const client_context& ctx, const commit_request& c, std::function<void(reply)> done) {
  auto ok = [done, id = ctx.broker_id](bool&) { done(reply{id, 200, "{}", {}}); };
  if (coordinator_of(ctx, c.group) == ctx.broker_id)
    ask<bool>(*ctx.system, ctx.groups, ctx.timeout, ok, failed_into(done, ctx.broker_id), commit_atom::value,
              c.group, c.offsets.dump(), c.generation, c.member);
  else
    ask<bool>(*ctx.system, ctx.groups, ctx.timeout, ok, failed_into(done, ctx.broker_id), commit_atom::value,
              c.group, c.offsets.dump(), c.generation, c.member, owner_fence_atom::value);
}

/// Sends each owner its part of a commit (this broker's part to the local
/// store) and answers 200 once every part is stored; otherwise the first
/// failing owner's answer (503 owner_unavailable when unreachable).
void commit_split(const client_context& ctx, std::shared_ptr<commit_request> c,
                  const std::map<std::string, json>& parts, const responder& respond) {
  auto answer = [respond](std::vector<reply>& replies) {
    for (auto& r : replies) {
      if (r.status == 200)
        continue;
      if (r.status == 0)
        respond(http_response::json(503, json{{"error", "owner_unavailable"},
                                              {"owner", r.broker},
                                              {"message", "the committed offsets of partitions owned by broker "
                                                            + r.broker + " could not be stored there: " + r.error}}
                                           .dump()));
      else
        respond(http_response::json(r.status, r.body));
      return;
    }
    respond(http_response::json(200, "{}"));
  };
  auto fan = replies_in::make(parts.size(), std::vector<reply>(parts.size()), answer);
  size_t i = 0;
  for (const auto& [owner, offsets] : parts) {
    auto index = i++;
    auto done = part_of(fan, index);
    commit_request part = *c;
    part.offsets = offsets;
    if (owner == ctx.broker_id) {
      store_local(ctx, part, done);
      continue;
    }
    json body{{"offsets", offsets}};
    if (part.generation >= 0)
      body["generation"] = part.generation;
    if (!part.member.empty())
      body["member_id"] = part.member;
    ask_peer(ctx, owner, "POST", "/cluster/groups/" + c->group + "/offsets", body.dump(), done);
  }
}

void commit_offsets(const client_context& ctx, http_request& req, const responder& respond) {
  json body;
  if (!parse_json(req, respond, body))
    return;
  auto c = std::make_shared<commit_request>();
  c->group = req.params["group"];
  if (!read_commit(body, *c, respond))
    return;
  if (!clustered(ctx)) {
    store_local(ctx, *c, relay_to(respond));
    return;
  }
  // Split by owner: this broker's catalogue and ownership table first; a
  // topic not held here is located in the peers' GET /cluster/loads.
  auto split = [ctx, c, respond](const std::map<cluster::topic_partition, std::string>& located) {
    std::map<std::string, json> parts;
    auto topics = ctx.catalog->get();
    for (const auto& o : c->offsets) {
      auto topic = o["topic"].get<std::string>();
      auto partition = o["partition"].get<int32_t>();
      std::string owner = ctx.broker_id;  // unknown everywhere: the local store answers 404 as before
      if (topics->count(topic))
        owner = remote_owner(ctx, topic, partition).value_or(ctx.broker_id);
      else if (auto it = located.find(cluster::topic_partition{topic, partition}); it != located.end())
        owner = it->second;
      if (!parts.count(owner))
        parts[owner] = json::array();
      parts[owner].push_back(o);
    }
    commit_split(ctx, c, parts, respond);
  };
  bool all_known = true;
  auto topics = ctx.catalog->get();
  for (const auto& o : c->offsets)
    all_known = all_known && topics->count(o["topic"].get<std::string>());
  if (all_known || ctx.peers->empty()) {
    split({});
    return;
  }
  survey_peers(peer_list(ctx), "/cluster/loads", ctx.timeout, [split](std::vector<peer_answer> answers) {
    std::map<cluster::topic_partition, std::string> located;
    for (const auto& a : answers)
      if (a.ok && a.body.contains("partitions") && a.body["partitions"].is_array())
        for (const auto& row : a.body["partitions"])
          if (row.is_object() && row.value("owner", std::string{}) == a.id && row.contains("topic")
              && row["topic"].is_string() && row.contains("partition") && row["partition"].is_number_integer())
            located[cluster::topic_partition{row["topic"].get<std::string>(), row["partition"].get<int32_t>()}] = a.id;
    split(located);
  });
}

/// This broker's committed offsets of `group` (topic or "" = all), limited
/// to partitions owned here when clustered; 404 unknown_group as before.
void read_local(const client_context& ctx, const std::string& group, const std::string& topic,
                std::function<void(reply)> done) {
  ask<std::string>(
    *ctx.system, ctx.groups, ctx.timeout,
    [ctx, done](std::string& body) {
      if (!clustered(ctx)) {
        done(reply{ctx.broker_id, 200, std::move(body), {}});
        return;
      }
      auto j = json::parse(body, nullptr, false);
      json kept = json::array();
      if (j.is_object() && j.contains("offsets") && j["offsets"].is_array())
        for (const auto& o : j["offsets"])
          if (owned_here(ctx, o["topic"].get<std::string>(), o["partition"].get<int32_t>()))
            kept.push_back(o);
      done(reply{ctx.broker_id, 200, json{{"offsets", kept}}.dump(), {}});
    },
    failed_into(done, ctx.broker_id), offsets_atom::value, group, topic);
}

/// GET /v1/groups/{g}/offsets.
void fetch_offsets(const client_context& ctx, http_request& req, const responder& respond) {
  auto group = req.params["group"];
  auto topic = req.query.count("topic") ? req.query["topic"] : std::string{};
  if (!topic.empty() && !cluster::valid_topic(topic)) {
    respond(http_response::error(400, "invalid_request", "topic: expected [A-Za-z0-9._-]{1,249} without '..'"));
    return;
  }
  gather_committed_offsets(ctx, group, topic,
                           [respond](int status, std::string body) { respond(http_response::json(status, body)); });
}

}  // namespace

void gather_committed_offsets(const client_context& ctx, const std::string& group, const std::string& topic,
                              std::function<void(int status, std::string body)> done) {
  if (!clustered(ctx) || !valid_group_id_quiet(group)) {
    read_local(ctx, group, topic, [done](reply r) { done(r.status, std::move(r.body)); });
    return;
  }
  auto peers = peer_list(ctx);
  // With the metadata log, a broker that owns no partition (of `topic`)
  // holds no offset that is read here (each broker answers only for what
  // it owns): one that does not answer — dead, its partitions failed over
  // in shared mode — does not fail the read.
  std::optional<std::set<std::string>> holders;
  if (ctx.owners) {
    holders.emplace();
    auto owners = ctx.owners->get();
    for (const auto& [tp, owner] : *owners)
      if (topic.empty() || tp.topic == topic)
        holders->insert(owner);
  }
  auto merge = [done, holders](std::vector<reply>& replies) {
    // The highest offset of each partition wins, with its metadata.
    std::map<std::pair<std::string, int32_t>, std::pair<int64_t, std::string>> merged;
    const reply* not_found = nullptr;
    bool found = false;
    for (const auto& r : replies) {
      if (r.status == 404) {
        not_found = &r;
        continue;
      }
      if (r.status == 0 && holders && !holders->count(r.broker))
        continue;
      if (r.status == 0) {
        done(503, json{{"error", "owner_unavailable"},
                       {"owner", r.broker},
                       {"message", "broker " + r.broker + " did not answer for its committed offsets: " + r.error}}
                    .dump());
        return;
      }
      auto j = json::parse(r.body, nullptr, false);
      if (r.status != 200 || !j.is_object() || !j.contains("offsets") || !j["offsets"].is_array()) {
        done(r.status == 200 ? 502 : r.status, r.body);
        return;
      }
      found = true;
      for (const auto& o : j["offsets"]) {
        auto key = std::make_pair(o["topic"].get<std::string>(), o["partition"].get<int32_t>());
        auto off = o["offset"].get<int64_t>();
        auto meta = o.contains("metadata") && o["metadata"].is_string() ? o["metadata"].get<std::string>() : "";
        auto [it, fresh] = merged.emplace(key, std::make_pair(off, meta));
        if (!fresh && off > it->second.first)
          it->second = {off, std::move(meta)};
      }
    }
    if (!found && not_found) {
      done(404, not_found->body);
      return;
    }
    json list = json::array();
    for (const auto& [key, committed] : merged)
      list.push_back(json{{"topic", key.first},
                          {"partition", key.second},
                          {"offset", committed.first},
                          {"metadata", committed.second}});
    done(200, json{{"offsets", list}}.dump());
  };
  auto fan = replies_in::make(peers.size() + 1, std::vector<reply>(peers.size() + 1), merge);
  read_local(ctx, group, topic, part_of(fan, 0));
  size_t i = 1;
  for (const auto& p : peers) {
    auto index = i++;
    ask_peer(ctx, p.id, "GET", "/cluster/groups/" + group + "/offsets" + (topic.empty() ? "" : "?topic=" + topic),
                 {}, part_of(fan, index));
  }
}

std::string group_coordinator_of(const client_context& ctx, const std::string& group) {
  return coordinator_of(ctx, group);
}

std::vector<std::string> group_brokers(const client_context& ctx) {
  // With the metadata log: its voters and registered brokers, the same list
  // on every broker that applied the same image.
  if (ctx.owners)
    if (auto members = ctx.owners->members(); !members.empty())
      return members;
  std::vector<std::string> ids{ctx.broker_id};
  for (const auto& p : ctx.peers->all())
    ids.push_back(p.id);
  return ids;
}

void add_group_routes(router& r, const client_context& ctx) {
  add_group_admin_routes(r, ctx);  // api/group_admin_routes.cpp
  r.add("POST", "/v1/groups/{group}/members",
        [ctx](http_request& req, responder respond) { join_group(ctx, req, respond); });
  r.add("POST", "/v1/groups/{group}/members/{member}/heartbeat",
        [ctx](http_request& req, responder respond) { heartbeat(ctx, req, respond); });
  r.add("DELETE", "/v1/groups/{group}/members/{member}",
        [ctx](http_request& req, responder respond) { leave(ctx, req, respond); });
  r.add("POST", "/v1/groups/{group}/offsets",
        [ctx](http_request& req, responder respond) { commit_offsets(ctx, req, respond); });
  r.add("GET", "/v1/groups/{group}/offsets",
        [ctx](http_request& req, responder respond) { fetch_offsets(ctx, req, respond); });
  // Which broker coordinates the group (an extension of CONTRACT §3).
  r.add("GET", "/v1/groups/{group}/coordinator", [ctx](http_request& req, responder respond) {
    auto group = req.params["group"];
    if (!valid_group(group, respond))
      return;
    auto coordinator = coordinator_of(ctx, group);
    auto url = url_of(ctx, coordinator);
    respond(http_response::json(200, json{{"group", group},
                                          {"coordinator", coordinator},
                                          {"url", url.empty() ? json(nullptr) : json(url)}}
                                       .dump()));
  });
}

void add_cluster_group_routes(router& r, const client_context& ctx) {
  add_cluster_group_admin_routes(r, ctx);
  // A join forwarded by a broker that is not the group's coordinator:
  // {"topics","member_id"?,"partitions"?:{"topic":count},"client_id"?}.
  // Runs the local group actor (never forwards again), whoever the
  // coordinator is by this broker's configuration.
  r.add("POST", "/cluster/groups/{group}/members", [ctx](http_request& req, responder respond) {
    json body;
    if (!parse_json(req, respond, body))
      return;
    auto jr = std::make_shared<join_request>();
    jr->group = req.params["group"];
    if (!read_join(body, *jr, respond))
      return;
    if (body.contains("partitions") && body["partitions"].is_object())
      for (const auto& [t, n] : body["partitions"].items())
        if (n.is_number_integer() && n.get<int64_t>() > 0)
          jr->counts[t] = n;
    if (body.contains("client_id") && body["client_id"].is_string())
      jr->client = body["client_id"].get<std::string>();
    local_join(ctx, jr, respond);
  });
  r.add("POST", "/cluster/groups/{group}/members/{member}/heartbeat", [ctx](http_request& req, responder respond) {
    auto body = json::parse(req.body.empty() ? std::string("{}") : req.body, nullptr, false);
    std::string client = body.is_object() && body.contains("client_id") && body["client_id"].is_string()
                           ? body["client_id"].get<std::string>()
                           : std::string{};
    local_beat(ctx, req.params["group"], req.params["member"], client, respond);
  });
  r.add("DELETE", "/cluster/groups/{group}/members/{member}", [ctx](http_request& req, responder respond) {
    local_leave(ctx, req.params["group"], req.params["member"], respond);
  });
  // A commit's part for partitions owned here: stored locally only; a
  // partition not owned here refuses the whole part (421 not_owner).
  r.add("POST", "/cluster/groups/{group}/offsets", [ctx](http_request& req, responder respond) {
    json body;
    if (!parse_json(req, respond, body))
      return;
    auto c = std::make_shared<commit_request>();
    c->group = req.params["group"];
    if (!read_commit(body, *c, respond))
      return;
    for (const auto& o : c->offsets) {
      auto topic = o["topic"].get<std::string>();
      auto partition = o["partition"].get<int32_t>();
      if (auto owner = remote_owner(ctx, topic, partition)) {
        respond(not_owner_response(ctx, topic, partition, *owner));
        return;
      }
    }
    store_local(ctx, *c, relay_to(respond));
  });
  // Deletes this broker's part of a group (Kafka DeleteGroups through its
  // coordinator): every offset of the group stored here, durably, and its
  // membership state. 200 {"deleted":bool} (false: nothing of it here).
  r.add("DELETE", "/cluster/groups/{group}/offsets", [ctx](http_request& req, responder respond) {
    ask<bool>(
      *ctx.system, ctx.groups, ctx.timeout,
      [respond](bool& deleted) { respond(http_response::json(200, json{{"deleted", deleted}}.dump())); },
      fail_with(respond), delete_atom::value, req.params["group"]);
  });
  // This broker's committed offsets of the group for partitions it owns.
  r.add("GET", "/cluster/groups/{group}/offsets", [ctx](http_request& req, responder respond) {
    auto topic = req.query.count("topic") ? req.query["topic"] : std::string{};
    read_local(ctx, req.params["group"], topic,
               relay_to(respond));
  });
}

}  // namespace moonmq::transport
