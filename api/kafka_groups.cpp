#include "api/kafka_groups.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <type_traits>
#include <vector>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/ask.hpp"
#include "actors/errors.hpp"
#include "groups/types.hpp"
#include "net/blocking_client.hpp"
#include "api/group_routes.hpp"
#include "net/http_client.hpp"

namespace moonmq::transport {

namespace ec = kafka::error_code;
using std::chrono::milliseconds;
using json = nlohmann::json;

namespace {

/// `j` as JSON text, any invalid UTF-8 in its strings (a Kafka client's
/// committed metadata, client or member id) replaced by U+FFFD, as Kafka's
/// own decoding of those strings does: never an exception.
std::string utf8_dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace

// --- request handlers -----------------------------------------------------------------

namespace {

int16_t commit_code_of(const caf::error& e) {
  if (e.category() == caf::atom("system") && static_cast<caf::sec>(e.code()) == caf::sec::request_timeout)
    return ec::request_timed_out;
  if (e.category() == caf::atom("moonmq")) {
    auto code = static_cast<errc>(e.code());
    if (code == errc::unknown_topic || code == errc::unknown_partition)
      return ec::unknown_topic_or_partition;
    if (code == errc::not_ready || ((code == errc::coded || code == errc::relayed) && fault_of(e) == fault::unavailable))
      return ec::coordinator_not_available;  // e.g. ownership_lost: retry at the partition's new owner
    if (code == errc::invalid_request)
      return ec::invalid_commit_offset_size;
  }
  return ec::unknown_server_error;
}

/// How long a parked JoinGroup or SyncGroup waits for the group actor's
/// answer: a SyncGroup until the leader's assignments, or a member's
/// session expiry that restarts the round (sessions are at most 30 min); a
/// JoinGroup at least as long, and its own rebalance timeout plus a margin
/// when that is longer.
constexpr std::chrono::milliseconds park_margin{30000};
constexpr std::chrono::milliseconds max_park{std::chrono::minutes(31)};

/// OffsetCommit: fenced by the Kafka group, then split by partition owner
/// as the HTTP API does (docs/groups.md): this broker's part goes to the
/// group_coordinator actor's offset store, each other owner's part to its
/// POST /cluster/groups/{g}/offsets.
void offset_commit(const std::shared_ptr<kafka_context>& ctx, kafka::offset_commit_request req, kafka_done done) {
  groups::kafka_commit_check check{req.group_id, req.member_id, req.group_instance_id, req.generation_id};
  auto commit = std::make_shared<kafka::offset_commit_request>(std::move(req));
  ask<int16_t>(
    *ctx->system, ctx->groups, ctx->timeout,
    [ctx, commit, done](int16_t& fence) { commit_at_owners(ctx, std::move(*commit), fence, done); },
    [ctx, commit, done](const caf::error& e) { commit_at_owners(ctx, std::move(*commit), commit_code_of(e), done); },
    kafka_group_atom::value, check);
}

}  // namespace

void commit_at_owners(const std::shared_ptr<kafka_context>& ctx, kafka::offset_commit_request req, int16_t fence,
                      kafka_done done) {
  auto resp = std::make_shared<kafka::offset_commit_response>();
  std::map<std::string, json> parts;  // owner -> offsets
  std::map<std::string, std::vector<kafka::offset_commit_partition_response*>> slots;
  auto topics = ctx->catalog->get();
  for (const auto& t : req.topics) {
    resp->topics.push_back({t.name, {}});
    resp->topics.back().partitions.reserve(t.partitions.size());
    for (const auto& p : t.partitions) {
      int16_t code = fence;
      auto owner = kafka_remote_owner(*ctx, t.name, p.partition_index).value_or(ctx->broker_id);
      auto known = topics->find(t.name);
      if (code == 0 && owner == ctx->broker_id
          && (known == topics->end() || p.partition_index < 0
              || static_cast<size_t>(p.partition_index) >= known->second.partitions.size()))
        code = ec::unknown_topic_or_partition;
      if (code == 0 && p.committed_offset < 0)
        code = ec::invalid_commit_offset_size;
      if (code == 0 && p.committed_metadata && p.committed_metadata->size() > groups::max_offset_metadata_bytes)
        code = ec::offset_metadata_too_large;
      resp->topics.back().partitions.push_back({p.partition_index, code});
      if (code == 0) {
        // Null metadata is stored as "" (Kafka's OffsetAndMetadata.NoMetadata).
        parts[owner].push_back(json{{"topic", t.name},
                                    {"partition", p.partition_index},
                                    {"offset", p.committed_offset},
                                    {"metadata", p.committed_metadata.value_or("")}});
        slots[owner].push_back(&resp->topics.back().partitions.back());
      }
    }
  }
  auto g = kafka_gather::make(parts.size(), [resp, done] {
    int errors = 0;
    for (const auto& t : resp->topics)
      for (const auto& p : t.partitions)
        errors += p.error_code != 0;
    done(std::move(*resp), errors);
  });
  for (auto& [owner, offsets] : parts) {
    auto mine = slots[owner];
    auto fail = [g, mine](int16_t code) {
      for (auto* slot : mine)
        slot->error_code = code;
      g->one();
    };
    if (owner == ctx->broker_id) {
      ask<bool>(
        *ctx->system, ctx->groups, ctx->timeout, [g](bool&) { g->one(); },
        [fail](const caf::error& e) { fail(commit_code_of(e)); }, commit_atom::value, req.group_id, utf8_dump(offsets),
        int32_t{-1}, std::string{});
      continue;
    }
    // Another owner. One that answers 421 naming a third broker (this
    // broker's table is behind a move) is followed once; anything else
    // unavailable (unreachable, moving) is retried by the client after
    // COORDINATOR_NOT_AVAILABLE.
    auto target = "/cluster/groups/" + req.group_id + "/offsets";
    auto body = utf8_dump(json{{"offsets", offsets}});
    auto judge = [g, fail](int status) {
      if (status == 200)
        g->one();
      else
        fail(status == 0 || status == 421 || status == 503 ? ec::coordinator_not_available
                                                          : ec::unknown_server_error);
    };
    kafka_peer_call(*ctx, owner, "POST", target, body, [ctx, owner, target, body, judge](int status, std::string answer) {
      auto named = status == 421 ? json::parse(answer, nullptr, false) : json{};
      auto next = named.is_object() && named.contains("owner") && named["owner"].is_string()
                    ? named["owner"].get<std::string>()
                    : std::string{};
      if (next.empty() || next == owner || next == ctx->broker_id) {
        judge(status);
        return;
      }
      kafka_peer_call(*ctx, next, "POST", target, body, [judge](int again, std::string) { judge(again); });
    });
  }
}

namespace {

/// The committed offsets of a group, gathered like GET /v1/groups/{g}/offsets:
/// this broker's store for partitions it owns, and every peer's
/// GET /cluster/groups/{g}/offsets. `failed` names the peers that did not answer.
struct offset_read {
  struct committed_offset {
    int64_t offset = -1;
    std::string metadata;
  };
  std::mutex mtx;
  std::map<std::pair<std::string, int32_t>, committed_offset> committed;
  std::set<std::string> failed;
};

void offset_fetch(const std::shared_ptr<kafka_context>& ctx, kafka::offset_fetch_request req, kafka_done done) {
  auto shared = std::make_shared<kafka::offset_fetch_request>(std::move(req));
  auto read = std::make_shared<offset_read>();
  auto add = [read](const std::string& text, const kafka_context* local) {
    auto j = json::parse(text, nullptr, false);
    if (!j.is_object() || !j.contains("offsets") || !j["offsets"].is_array())
      return;
    std::lock_guard<std::mutex> lock{read->mtx};
    for (const auto& o : j["offsets"]) {
      auto topic = o.value("topic", std::string{});
      auto partition = o.value("partition", 0);
      if (local && kafka_remote_owner(*local, topic, partition))
        continue;  // a stale local copy: its owner answers for it
      auto meta = o.contains("metadata") && o["metadata"].is_string() ? o["metadata"].get<std::string>() : "";
      read->committed[{topic, partition}] = {o.value("offset", int64_t{-1}), std::move(meta)};
    }
  };
  auto known = ctx->peers->all();
  size_t peers = 0;
  for (const auto& p : known)
    peers += p.client != nullptr;
  auto g = kafka_gather::make(1 + peers, [ctx, shared, read, done] {
    kafka::offset_fetch_response resp;
    auto owner_failed = [&](const std::string& topic, int32_t partition) {
      auto owner = kafka_remote_owner(*ctx, topic, partition);
      return owner && read->failed.count(*owner);
    };
    if (!shared->topics) {
      if (!read->failed.empty())
        resp.error_code = ec::coordinator_not_available;  // a peer's part is missing: retry
      std::map<std::string, kafka::offset_fetch_topic_response> by_topic;
      for (const auto& [tp, off] : read->committed) {
        auto& t = by_topic[tp.first];
        t.name = tp.first;
        t.partitions.push_back({tp.second, off.offset, off.metadata, 0});
      }
      for (auto& [name, t] : by_topic)
        resp.topics.push_back(std::move(t));
    } else {
      for (const auto& t : *shared->topics) {
        kafka::offset_fetch_topic_response tr;
        tr.name = t.name;
        for (auto p : t.partition_indexes) {
          auto it = read->committed.find({t.name, p});
          int16_t code = owner_failed(t.name, p) ? ec::coordinator_not_available : int16_t{0};
          // No commit: offset -1 and metadata "" (Kafka's OffsetFetchResponse.NO_METADATA).
          if (it == read->committed.end())
            tr.partitions.push_back({p, -1, std::string{}, code});
          else
            tr.partitions.push_back({p, it->second.offset, it->second.metadata, code});
        }
        resp.topics.push_back(std::move(tr));
      }
    }
    int errors = resp.error_code != 0;
    for (const auto& t : resp.topics)
      for (const auto& p : t.partitions)
        errors += p.error_code != 0;
    done(std::move(resp), errors);
  });
  ask<std::string>(
    *ctx->system, ctx->groups, ctx->timeout,
    [g, add, ctx](std::string& text) {
      add(text, ctx.get());
      g->one();
    },
    [g, read, ctx](const caf::error& e) {
      // Unknown group (a coded not_found): nothing committed here.
      if (!(e.category() == caf::atom("moonmq") && static_cast<errc>(e.code()) == errc::coded)) {
        std::lock_guard<std::mutex> lock{read->mtx};
        read->failed.insert(ctx->broker_id);
      }
      g->one();
    },
    offsets_atom::value, shared->group_id, std::string{});
  for (const auto& p : known) {
    if (!p.client)
      continue;
    kafka_peer_call(*ctx, p.id, "GET", "/cluster/groups/" + shared->group_id + "/offsets", {},
              [g, add, read, id = p.id](int status, std::string body) {
                if (status == 200)
                  add(body, nullptr);
                else if (status != 404) {
                  std::lock_guard<std::mutex> lock{read->mtx};
                  read->failed.insert(id);
                }
                g->one();
              });
  }
}

kafka::find_coordinator_response find_coordinator(const kafka_context& ctx, const kafka::find_coordinator_request& req) {
  kafka::find_coordinator_response r;
  auto coordinator = kafka_coordinator_of(ctx, req.key_value);
  r.node_id = kafka_node_id(ctx, coordinator);
  if (r.node_id < 0) {
    // A broker that joins has no node id until its registration applies.
    r.error_code = ec::coordinator_not_available;
    r.error_message = "the coordinator " + coordinator + " has no Kafka node id yet";
    return r;
  }
  if (coordinator == ctx.broker_id) {
    r.host = ctx.advertised_host;
    r.port = ctx.port.load();
    return r;
  }
  for (const auto& p : ctx.peers->all()) {
    std::string host;
    uint16_t port = 0;
    if (p.id == coordinator && split_host_port(p.kafka_address, host, port)) {
      r.host = host;
      r.port = port;
      return r;
    }
  }
  r.error_code = ec::coordinator_not_available;
  r.error_message = "the coordinator " + coordinator + " has no KafkaAddress in Cluster.Peers";
  r.node_id = -1;
  return r;
}

/// The groups coordinated here that Kafka's coordinator would hold as Empty
/// without any member here: committed offsets on some broker (this broker's
/// group actor and every peer's GET /cluster/groups "committed"; offsets
/// live with the partitions' owners), no member in the Kafka table and no
/// HTTP member on any broker. Brokers that do not answer in time are left
/// out (their groups may then be missing). `done` once, from any thread.
void offset_only_groups(const std::shared_ptr<kafka_context>& ctx, std::function<void(std::set<std::string>)> done) {
  struct survey {
    std::mutex mtx;
    std::set<std::string> committed, busy;
    std::set<std::string> kafka;  ///< the groups of this broker's Kafka membership
  };
  auto sum = std::make_shared<survey>();
  auto add = [sum](const std::string& text) {
    auto j = json::parse(text, nullptr, false);
    if (!j.is_object())
      return;
    std::lock_guard<std::mutex> lock{sum->mtx};
    for (const auto& id : j.value("committed", json::array()))
      if (id.is_string())
        sum->committed.insert(id.get<std::string>());
    for (const auto& g : j.value("groups", json::array()))
      if (g.is_object() && g.value("members", json::number_unsigned_t{0}) > 0)
        sum->busy.insert(g.value("group", std::string{}));
  };
  auto known = ctx->peers->all();
  size_t peers = 0;
  for (const auto& p : known)
    peers += p.client != nullptr;
  auto g = kafka_gather::make(2 + peers, [ctx, sum, done] {
    std::set<std::string> out;
    for (const auto& id : sum->committed)
      if (!sum->busy.count(id) && kafka_coordinator_of(*ctx, id) == ctx->broker_id && !sum->kafka.count(id))
        out.insert(id);
    done(std::move(out));
  });
  // ListGroups and DescribeGroups run alone on their connection: a silent
  // peer may hold it for this bound, not for the whole request timeout.
  const auto bound = std::min<std::chrono::milliseconds>(ctx->timeout, std::chrono::seconds(2));
  ask<std::vector<kafka::listed_group>>(
    *ctx->system, ctx->groups, bound,
    [g, sum](std::vector<kafka::listed_group>& listed) {
      {
        std::lock_guard<std::mutex> lock{sum->mtx};
        for (const auto& l : listed)
          sum->kafka.insert(l.group_id);
      }
      g->one();
    },
    [g](const caf::error&) { g->one(); }, kafka_group_atom::value, list_atom::value);
  ask<std::string>(
    *ctx->system, ctx->groups, bound,
    [g, add](std::string& text) {
      add(text);
      g->one();
    },
    [g](const caf::error&) { g->one(); }, list_atom::value);
  for (const auto& p : known)
    if (p.client)
      kafka_peer_call(
        *ctx, p.id, "GET", "/cluster/groups", {},
        [g, add](int status, std::string body) {
          if (status == 200)
            add(body);
          g->one();
        },
        bound);
}

/// ListGroups: the groups this broker coordinates (a client asks every
/// broker and merges the lists, as with Kafka): those of its Kafka table,
/// and those known only by committed offsets, as protocol type "consumer"
/// (Kafka lists such a group Empty from its offsets topic, with "consumer"
/// once consumer members have left and "" for standalone commits; clients
/// take either).
void list_groups(const std::shared_ptr<kafka_context>& ctx, kafka_done done) {
  offset_only_groups(ctx, [ctx, done](std::set<std::string> offset_only) {
    auto answer = [ctx, done, offset_only](std::vector<kafka::listed_group> known) {
      kafka::list_groups_response r;
      std::set<std::string> listed;
      for (auto& g : known)
        if (kafka_coordinator_of(*ctx, g.group_id) == ctx->broker_id) {
          listed.insert(g.group_id);
          r.groups.push_back(std::move(g));
        }
      // A group that got members since the survey is listed once, from the membership.
      for (const auto& id : offset_only)
        if (!listed.count(id))
          r.groups.push_back({id, "consumer"});
      done(std::move(r), 0);
    };
    ask<std::vector<kafka::listed_group>>(
      *ctx->system, ctx->groups, ctx->timeout, [answer](std::vector<kafka::listed_group>& known) { answer(known); },
      [done](const caf::error&) {
        kafka::list_groups_response r;
        r.error_code = ec::coordinator_not_available;
        done(std::move(r), 1);
      },
      kafka_group_atom::value, list_atom::value);
  });
}

/// DescribeGroups: each group this broker coordinates as its table holds
/// it; one known only by committed offsets is Empty, protocol type
/// "consumer", no members (as Kafka describes it); else Dead.
/// NOT_COORDINATOR (16) for the others, per group.
void describe_groups(const std::shared_ptr<kafka_context>& ctx, const kafka::describe_groups_request& req,
                     kafka_done done) {
  auto r = std::make_shared<kafka::describe_groups_response>();
  r->groups.resize(req.groups.size());
  auto finish = [r, done] {
    int errors = 0;
    for (const auto& g : r->groups)
      errors += g.error_code != 0;
    done(std::move(*r), errors);
  };
  // Each group coordinated here as its membership holds it; then the Dead
  // ones are looked for among the groups known only by committed offsets.
  auto described = kafka_gather::make(req.groups.size(), [ctx, r, finish] {
    bool unknown = false;
    for (const auto& g : r->groups)
      unknown = unknown || (g.error_code == 0 && g.group_state == "Dead");
    if (!unknown) {
      finish();
      return;
    }
    offset_only_groups(ctx, [r, finish](std::set<std::string> offset_only) {
      for (auto& g : r->groups)
        if (g.error_code == 0 && g.group_state == "Dead" && offset_only.count(g.group_id)) {
          g.group_state = "Empty";
          g.protocol_type = "consumer";
        }
      finish();
    });
  });
  for (size_t i = 0; i < req.groups.size(); ++i) {
    auto* slot = &r->groups[i];
    slot->group_id = req.groups[i];
    if (kafka_coordinator_of(*ctx, slot->group_id) != ctx->broker_id) {
      slot->error_code = ec::not_coordinator;
      described->one();
      continue;
    }
    // Asked for (v3+): with no authorizer, every operation a group allows:
    // READ (3), DELETE (6), DESCRIBE (8) of Kafka's AclOperation codes.
    ask<kafka::described_group>(
      *ctx->system, ctx->groups, ctx->timeout,
      [slot, described, authorized = req.include_authorized_operations](kafka::described_group& d) {
        *slot = std::move(d);
        if (authorized)
          slot->authorized_operations = (1 << 3) | (1 << 6) | (1 << 8);
        described->one();
      },
      [slot, described](const caf::error&) {
        slot->error_code = ec::coordinator_not_available;
        described->one();
      },
      kafka_group_atom::value, status_atom::value, slot->group_id);
  }
}

/// DeleteGroups, one group on its coordinator: refused (68) while Kafka or
/// HTTP members are in it; else its offsets are deleted on every broker
/// (each owner keeps the offsets of its partitions: this broker's group
/// actor and every peer's DELETE /cluster/groups/{g}/offsets) and its
/// membership state here. 69 GROUP_ID_NOT_FOUND when no broker held
/// anything of it; 15 (retriable: deleting again is harmless) when a peer
/// did not answer.
void delete_group(const std::shared_ptr<kafka_context>& ctx, const std::string& group,
                  std::function<void(int16_t)> done) {
  delete_group_everywhere(*ctx->system, ctx->groups, ctx->peers->all(), ctx->timeout, group,
                          [done](group_deletion d) {
                            switch (d) {
                              case group_deletion::deleted: done(0); return;
                              case group_deletion::not_found: done(ec::group_id_not_found); return;
                              case group_deletion::non_empty: done(ec::non_empty_group); return;
                              case group_deletion::unavailable: done(ec::coordinator_not_available); return;
                            }
                          });
}

/// NOT_COORDINATOR (16) when the group of a group request is coordinated elsewhere.
int16_t not_here(const kafka_context& ctx, const kafka::request_body& body) {
  std::string group;
  std::visit(
    [&](const auto& r) {
      using T = std::decay_t<decltype(r)>;
      if constexpr (std::is_same_v<T, kafka::join_group_request> || std::is_same_v<T, kafka::sync_group_request>
                    || std::is_same_v<T, kafka::heartbeat_request> || std::is_same_v<T, kafka::leave_group_request>
                    || std::is_same_v<T, kafka::offset_commit_request>
                    || std::is_same_v<T, kafka::offset_fetch_request>)
        group = r.group_id;
    },
    body);
  return kafka_coordinator_of(ctx, group) == ctx.broker_id ? 0 : ec::not_coordinator;
}

/// The answer of a group request refused as a whole with `code`.
kafka::response_body error_answer(const kafka::request_body& body, int16_t code) {
  if (std::holds_alternative<kafka::join_group_request>(body)) {
    kafka::join_group_response r;
    r.error_code = code;
    return r;
  }
  if (std::holds_alternative<kafka::sync_group_request>(body)) {
    kafka::sync_group_response r;
    r.error_code = code;
    return r;
  }
  if (std::holds_alternative<kafka::heartbeat_request>(body)) {
    kafka::heartbeat_response r;
    r.error_code = code;
    return r;
  }
  if (std::holds_alternative<kafka::leave_group_request>(body)) {
    kafka::leave_group_response r;
    r.error_code = code;
    return r;
  }
  if (auto* c = std::get_if<kafka::offset_commit_request>(&body)) {
    kafka::offset_commit_response r;
    for (const auto& t : c->topics) {
      r.topics.push_back({t.name, {}});
      for (const auto& p : t.partitions)
        r.topics.back().partitions.push_back({p.partition_index, code});
    }
    return r;
  }
  kafka::offset_fetch_response r;  // OffsetFetch: the top-level error (v2+) and per partition
  r.error_code = code;
  if (auto* f = std::get_if<kafka::offset_fetch_request>(&body); f && f->topics)
    for (const auto& t : *f->topics) {
      r.topics.push_back({t.name, {}});
      for (auto p : t.partition_indexes)
        r.topics.back().partitions.push_back({p, -1, std::string{}, code});
    }
  return r;
}

/// OffsetDelete (47, KIP-496) on the group's coordinator: the committed
/// offsets of the named partitions go from every broker. Top level: 24 a
/// bad group id, 16 coordinated elsewhere, 68 a group with members that
/// does not use the consumer protocol, 69 a group nobody knows (no members,
/// no offsets anywhere), 15 a broker did not answer (retriable). Per
/// partition: 3 unknown, 86 GROUP_SUBSCRIBED_TO_TOPIC while a member
/// (Kafka's or HTTP's) subscribes to its topic (nothing deleted for it).
void offset_delete(const std::shared_ptr<kafka_context>& ctx, kafka::offset_delete_request req, kafka_done done) {
  auto resp = std::make_shared<kafka::offset_delete_response>();
  for (const auto& t : req.topics) {
    resp->topics.push_back({t.name, {}});
    for (auto p : t.partitions)
      resp->topics.back().partitions.push_back({p, 0});
  }
  auto answer = [resp, done](int16_t top) {
    resp->error_code = top;
    int errors = top != 0;
    for (auto& t : resp->topics)
      for (auto& p : t.partitions) {
        if (top != 0)
          p.error_code = 0;  // Kafka: a top-level error leaves the partitions empty-handed
        errors += p.error_code != 0;
      }
    if (top != 0)
      resp->topics.clear();
    done(std::move(*resp), errors);
  };
  if (!groups::validate_group_id(req.group_id)) {
    answer(ec::invalid_group_id);
    return;
  }
  if (kafka_coordinator_of(*ctx, req.group_id) != ctx->broker_id) {
    answer(ec::not_coordinator);
    return;
  }
  // The Kafka members' subscriptions, then the HTTP members', both from
  // this broker's group actor.
  ask<groups::kafka_subscription>(
    *ctx->system, ctx->groups, ctx->timeout,
    [ctx, req, resp, answer](groups::kafka_subscription& kafka_subs) {
      if (kafka_subs.has_members && !kafka_subs.consumer) {
        answer(ec::non_empty_group);
        return;
      }
      // The HTTP members' subscriptions.
      ask<std::string>(
        *ctx->system, ctx->groups, ctx->timeout,
        [ctx, req, resp, answer, kafka_subs](std::string& text) {
          auto http = json::parse(text, nullptr, false);
          std::set<std::string> subscribed = kafka_subs.topics;
          bool known = kafka_subs.exists;
          if (http.is_object()) {
            known = known || http.value("state", std::string{"Dead"}) != "Dead";
            for (const auto& m : http.value("members", json::array()))
              for (const auto& t : m.value("topics", json::array()))
                subscribed.insert(t.get<std::string>());
          }
          auto topics = ctx->catalog->get();
          std::vector<std::pair<std::string, std::vector<int32_t>>> todo;
          for (auto& t : resp->topics) {
            auto local = topics->find(t.name);
            int32_t count = local == topics->end() ? -1 : static_cast<int32_t>(local->second.partitions.size());
            if (ctx->owners)
              if (auto image = ctx->owners->topics(); image->count(t.name))
                count = std::max(count, image->at(t.name).partitions);
            std::vector<int32_t> parts;
            for (auto& p : t.partitions) {
              if (p.partition_index < 0 || p.partition_index >= count)
                p.error_code = ec::unknown_topic_or_partition;
              else if (subscribed.count(t.name))
                p.error_code = ec::group_subscribed_to_topic;
              else
                parts.push_back(p.partition_index);
            }
            if (!parts.empty())
              todo.emplace_back(t.name, std::move(parts));
          }
          struct tally {
            std::mutex mtx;
            bool ok = true;
            bool held = false;
          };
          auto sum = std::make_shared<tally>();
          auto g = kafka_gather::make(todo.size(), [sum, known, answer] {
            // Nothing of the group anywhere (no membership, no broker storing
            // any offset of it): Kafka's GROUP_ID_NOT_FOUND. A group whose
            // offsets were already deleted, or that has none for these
            // partitions, still exists.
            answer(!sum->ok                  ? ec::coordinator_not_available
                   : !known && !sum->held ? ec::group_id_not_found
                                          : int16_t{0});
          });
          for (auto& [topic, parts] : todo)
            delete_offsets_everywhere(*ctx->system, ctx->groups, ctx->peers->all(), ctx->timeout, req.group_id, topic,
                                      std::move(parts), [sum, g](bool ok, bool held) {
                                        {
                                          std::lock_guard<std::mutex> lock{sum->mtx};
                                          sum->ok = sum->ok && ok;
                                          sum->held = sum->held || held;
                                        }
                                        g->one();
                                      });
        },
        [answer](const caf::error&) { answer(ec::coordinator_not_available); }, status_atom::value, req.group_id);
    },
    [answer](const caf::error&) { answer(ec::coordinator_not_available); }, kafka_group_atom::value, req.group_id);
}

}  // namespace

void handle_kafka_group_request(const std::shared_ptr<kafka_context>& ctx, kafka::request& req, kafka_done done) {
  auto version = req.header.api_version;
  if (auto* fc = std::get_if<kafka::find_coordinator_request>(&req.body)) {
    done(find_coordinator(*ctx, *fc), 0);
    return;
  }
  if (std::holds_alternative<kafka::list_groups_request>(req.body)) {
    list_groups(ctx, std::move(done));
    return;
  }
  if (auto* od = std::get_if<kafka::offset_delete_request>(&req.body)) {
    offset_delete(ctx, std::move(*od), std::move(done));
    return;
  }
  if (auto* dg = std::get_if<kafka::describe_groups_request>(&req.body)) {
    describe_groups(ctx, *dg, std::move(done));
    return;
  }
  if (auto* dg = std::get_if<kafka::delete_groups_request>(&req.body)) {
    auto resp = std::make_shared<kafka::delete_groups_response>();
    resp->results.reserve(dg->groups_names.size());
    for (const auto& id : dg->groups_names)
      resp->results.push_back({id, 0});
    auto g = kafka_gather::make(resp->results.size(), [resp, done] {
      int errors = 0;
      for (const auto& r : resp->results)
        errors += r.error_code != 0;
      done(std::move(*resp), errors);
    });
    for (auto& r : resp->results) {
      auto* slot = &r;
      if (!groups::validate_group_id(r.group_id)) {
        slot->error_code = ec::invalid_group_id;
        g->one();
      } else if (kafka_coordinator_of(*ctx, r.group_id) != ctx->broker_id) {
        slot->error_code = ec::not_coordinator;
        g->one();
      } else {
        delete_group(ctx, r.group_id, [slot, g](int16_t code) {
          slot->error_code = code;
          g->one();
        });
      }
    }
    return;
  }
  // Every other group API is served by the group's coordinator only
  // (clients re-find it after NOT_COORDINATOR, as with Kafka).
  if (auto code = not_here(*ctx, req.body); code != 0) {
    done(error_answer(req.body, code), 1);
    return;
  }
  // Membership is the group actor's (groups/kafka_membership.hpp). A
  // JoinGroup or SyncGroup is answered when its round completes, which may
  // take up to the members' rebalance timeout: its request waits that long.
  // No answer from the group actor: the client retries after
  // COORDINATOR_NOT_AVAILABLE, as when a coordinator is moving.
  auto fail = [done, unavailable = error_answer(req.body, ec::coordinator_not_available)](const caf::error&) {
    done(unavailable, 1);
  };
  if (auto* j = std::get_if<kafka::join_group_request>(&req.body)) {
    // At least as long as a SyncGroup may park: another member's longer
    // rebalance timeout may hold the round open past this member's own.
    const auto wait = std::max(
      max_park, std::chrono::milliseconds(std::max(j->rebalance_timeout_ms, j->session_timeout_ms)) + park_margin);
    ask<kafka::join_group_response>(
      *ctx->system, ctx->groups, wait,
      [done](kafka::join_group_response& r) {
        auto e = r.error_code != 0;
        done(std::move(r), e);
      },
      fail, kafka_group_atom::value, *j, req.header.client_id.value_or(""), version, req.client_host);
  } else if (auto* s = std::get_if<kafka::sync_group_request>(&req.body)) {
    ask<kafka::sync_group_response>(
      *ctx->system, ctx->groups, max_park,
      [done](kafka::sync_group_response& r) {
        auto e = r.error_code != 0;
        done(std::move(r), e);
      },
      fail, kafka_group_atom::value, *s);
  } else if (auto* h = std::get_if<kafka::heartbeat_request>(&req.body)) {
    ask<int16_t>(
      *ctx->system, ctx->groups, ctx->timeout,
      [done](int16_t& code) {
        kafka::heartbeat_response r;
        r.error_code = code;
        done(r, code != 0);
      },
      fail, kafka_group_atom::value, *h);
  } else if (auto* l = std::get_if<kafka::leave_group_request>(&req.body)) {
    ask<kafka::leave_group_response>(
      *ctx->system, ctx->groups, ctx->timeout,
      [done](kafka::leave_group_response& r) {
        int errors = r.error_code != 0;
        for (const auto& m : r.members)
          errors += m.error_code != 0;
        done(std::move(r), errors);
      },
      fail, kafka_group_atom::value, *l, version);
  } else if (auto* c = std::get_if<kafka::offset_commit_request>(&req.body)) {
    offset_commit(ctx, std::move(*c), std::move(done));
  } else if (auto* f = std::get_if<kafka::offset_fetch_request>(&req.body)) {
    offset_fetch(ctx, std::move(*f), std::move(done));
  } else {
    // decode_request only yields supported APIs; every one is handled above
    // or in handle_kafka_request.
    done(std::nullopt, 1);
  }
}

}  // namespace moonmq::transport
