#include "api/client_routes.hpp"

#include <atomic>
#include <map>
#include <mutex>
#include <tuple>
#include <chrono>

#include <nlohmann/json.hpp>

#include "config/dynamic.hpp"
#include "actors/ask.hpp"
#include "actors/direct_append.hpp"
#include "actors/errors.hpp"
#include "actors/session_probe.hpp"
#include "cluster/forwarded_produce.hpp"
#include "dataplane/records_binary.hpp"
#include "dataplane/records_json.hpp"
#include "dataplane/topic_name.hpp"
#include "storage/record_batch.hpp"
#include "api/actor_answers.hpp"
#include "api/group_routes.hpp"
#include "net/http_client.hpp"
#include "peers/peer_survey.hpp"
#include "api/session_routes.hpp"
#include "util/clock.hpp"

namespace moonmq::transport {
namespace {

using json = nlohmann::json;
using std::chrono::milliseconds;

/// Parses the JSON body; answers 400 and returns false when malformed.
bool parse_body(const http_request& req, const responder& respond, json& out) {
  out = json::parse(req.body, nullptr, false);
  if (out.is_discarded()) {
    respond(http_response::error(400, "malformed_json", "the request body is not valid JSON"));
    return false;
  }
  return true;
}

/// Parses a non-negative decimal query value; nullopt when absent; answers
/// 400 and sets `bad` when malformed.
std::optional<int64_t> query_int(const http_request& req, const std::string& key, const responder& respond,
                                 bool& bad) {
  auto it = req.query.find(key);
  if (it == req.query.end() || it->second.empty())
    return std::nullopt;
  const auto& v = it->second;
  if (v.size() > 18 || v.find_first_not_of("0123456789") != std::string::npos) {
    respond(http_response::error(400, "invalid_request", key + " must be a non-negative integer, got '" + v + "'"));
    bad = true;
    return std::nullopt;
  }
  return std::stoll(v);
}

}  // namespace

bool session_client(const http_request& req, const responder& respond, std::string& client) {
  std::string error;
  client = client_id_of(req, error);
  if (!error.empty()) {
    respond(http_response::error(400, "invalid_request", error));
    return false;
  }
  return true;
}

namespace {

// --- produce fan-out ----------------------------------------------------------

/// Collects the base offset of every part of one produce request, local or
/// forwarded, and answers once the last part is in (the first failure wins).
struct produce_gather {
  std::mutex mtx;
  std::vector<int64_t> bases;
  std::optional<http_response> failure;
  size_t pending = 0;
  std::function<void(std::vector<int64_t>&)> ok;
  responder respond;

  void part_done(size_t i, int64_t base) {
    std::unique_lock<std::mutex> g{mtx};
    bases[i] = base;
    finish(g);
  }
  void part_failed(http_response why) {
    std::unique_lock<std::mutex> g{mtx};
    if (!failure)
      failure = std::move(why);
    finish(g);
  }

private:
  void finish(std::unique_lock<std::mutex>& g) {
    if (--pending != 0)
      return;
    g.unlock();
    if (failure)
      respond(std::move(*failure));
    else
      ok(bases);
    ok = nullptr;  // drops the captures (they may hold this gather)
  }
};

/// One part of a produce request (one partition's batch). Where it goes is
/// decided when it is sent, and decided again after a refusal that proves
/// nothing was appended: the partition sealed for a move's cutover
/// (partition_moved), or a forward answered 421 by a destination that does
/// not own the partition yet. Such parts wait a little and re-route until
/// the move settles or the deadline passes, so a cutover shows as a short
/// produce stall instead of errors.
struct produce_part {
  size_t index = 0;
  std::string topic;
  int32_t partition = 0;
  std::string batch;  ///< kept for re-sends: each attempt sends a copy
  bool durable = true;
  std::chrono::steady_clock::time_point deadline;
  int attempt = 0;
  /// The owner named by the last 421: a broker whose table is older than the
  /// owner's (a move it did not take part in) still reaches the partition.
  std::string owner_hint;
};

/// At most this many batch bytes go in one forwarded request, unless one
/// part alone is larger (Server.Http.MaxBodyBytes is 16 MiB by default).
constexpr size_t forward_request_bytes = 1 << 20;

/// Parts owned by another broker, by owner: forwarded together.
using forwards = std::map<std::string, std::vector<std::shared_ptr<produce_part>>>;

void route_part(const client_context& ctx, std::shared_ptr<produce_gather> gather, std::shared_ptr<produce_part> part,
                std::vector<direct_append>* local = nullptr, forwards* remote = nullptr);

/// Re-routes `part` after a short backoff, or fails it with `why` once its
/// deadline would pass. A move's refusal lasts about 10-30 ms (the sealed
/// window from the source's seal to the destination's confirm, bench/shared),
/// so the first `quick_reroutes` tries come every 2 ms, then 5 ms doubling to
/// 20 ms: a coarser step would add up to a step to every produce the window
/// holds.
void route_later(const client_context& ctx, std::shared_ptr<produce_gather> gather, std::shared_ptr<produce_part> part,
                 http_response why) {
  constexpr int quick_reroutes = 25;
  auto delay = milliseconds(part->attempt < quick_reroutes ? 2
                                                           : std::min(5 << std::min(part->attempt - quick_reroutes, 2), 20));
  if (std::chrono::steady_clock::now() + delay >= part->deadline) {
    gather->part_failed(std::move(why));
    return;
  }
  ++part->attempt;
  ctx.system->spawn(
    [](caf::event_based_actor* self, milliseconds wait, std::function<void()> then) -> caf::behavior {
      self->delayed_send(self, wait, tick_atom::value);
      return {[self, then](tick_atom) {
        then();
        self->quit();
      }};
    },
    delay, std::function<void()>{[ctx, gather, part] { route_part(ctx, gather, part); }});
}

/// Settles one forwarded part by its owner's answer: appended, re-routed
/// after a refusal that proves nothing was appended (421, partition_moved),
/// or failed with the owner's answer.
void settle_part(const client_context& ctx, const std::shared_ptr<produce_gather>& gather,
                 const std::shared_ptr<produce_part>& part, const std::string& owner,
                 const cluster::forwarded_answer& a) {
  if (a.status == 200) {
    gather->part_done(part->index, a.base_offset);
    return;
  }
  json why{{"error", a.error}, {"message", a.message}};
  if (!a.owner.empty())
    why["owner"] = a.owner;
  auto answer = http_response::json(a.status, why.dump());
  if (a.status == 421)
    part->owner_hint = a.owner == owner ? std::string{} : a.owner;
  if (a.status == 421 || a.error == "partition_moved")
    route_later(ctx, gather, part, std::move(answer));
  else
    gather->part_failed(std::move(answer));
}

/// Forwards `parts` (encoded batches of one topic and acks) to `owner`, the
/// broker that owns them: in one request (`batched`,
/// cluster/forwarded_produce.hpp), or, to a broker of an earlier version
/// that lacks that route (404 not_found), one request per part through
/// `/cluster/partitions/{t}/{p}/records`. Each part is settled on its own.
void forward_parts(const client_context& ctx, std::shared_ptr<produce_gather> gather,
                   std::vector<std::shared_ptr<produce_part>> parts, const std::string& owner, bool batched = true) {
  auto fail_all = [gather](const std::vector<std::shared_ptr<produce_part>>& all, const http_response& why) {
    for (size_t i = 0; i < all.size(); ++i)
      gather->part_failed(why);
  };
  auto peer = ctx.peers->find(owner);
  if (!peer || !peer->client) {
    fail_all(parts, http_response::error(503, "owner_unreachable", "partition owner " + owner
                                                                     + " is not a configured peer"));
    return;
  }
  // The body is a copy: each part keeps its batch for a re-send.
  std::vector<int32_t> partitions;
  partitions.reserve(parts.size());
  const auto acks = std::string{"?acks="} + (parts.front()->durable ? "leader" : "none");
  peer_request req;
  req.method = "POST";
  if (batched) {
    req.target = "/cluster/topics/" + parts.front()->topic + "/records" + acks;
    size_t bytes = 0;
    for (const auto& part : parts)
      bytes += cluster::forwarded_part_bytes(part->batch.size());
    req.body.reserve(bytes);
    for (const auto& part : parts) {
      partitions.push_back(part->partition);
      cluster::append_forwarded_part(req.body, part->partition, part->batch);
    }
  } else {
    req.target = "/cluster/partitions/" + parts.front()->topic + "/" + std::to_string(parts.front()->partition)
                 + "/records" + acks;
    req.body = parts.front()->batch;
  }
  req.headers = {{"Content-Type", "application/octet-stream"}};
  if (!peer->token.empty())
    req.headers.emplace_back("X-Cluster-Token", peer->token);
  req.timeout = ctx.timeout;
  peer->client->request(std::move(req), [ctx, gather, parts = std::move(parts), partitions = std::move(partitions), owner,
                                         fail_all, batched](peer_result res) {
    if (!res.ok()) {
      fail_all(parts, http_response::error(503, "owner_unreachable",
                                           "forwarding to " + owner + " failed: " + res.error_message));
      return;
    }
    // A batched 200 is parsed once, by decode_forwarded_answers.
    auto body = !batched || res.status != 200 ? json::parse(res.body, nullptr, false) : json{};
    auto text = [&](const char* key) {
      return body.is_object() && body.contains(key) && body[key].is_string() ? body[key].get<std::string>()
                                                                             : std::string{};
    };
    if (!batched) {
      cluster::forwarded_answer a{parts.front()->partition, res.status, -1, text("error"), text("message"),
                                  text("owner")};
      if (res.status == 200) {
        if (body.is_object() && body.contains("base_offset") && body["base_offset"].is_number_integer())
          a.base_offset = body["base_offset"].get<int64_t>();
        else
          a = {a.partition, 502, -1, "bad_owner_answer", "the answer of " + owner + " has no base_offset", {}};
      }
      settle_part(ctx, gather, parts.front(), owner, a);
      return;
    }
    if (res.status == 404 && text("error") == "not_found") {
      for (const auto& part : parts)  // an owner of an earlier version
        forward_parts(ctx, gather, {part}, owner, false);
      return;
    }
    if (res.status != 200) {
      fail_all(parts, http_response::json(res.status, res.body));
      return;
    }
    std::vector<cluster::forwarded_answer> answers;
    if (auto why = cluster::decode_forwarded_answers(res.body, partitions, answers); !why.empty()) {
      fail_all(parts, http_response::error(502, "bad_owner_answer", "the answer of " + owner + ": " + why));
      return;
    }
    for (size_t i = 0; i < parts.size(); ++i)
      settle_part(ctx, gather, parts[i], owner, answers[i]);
  });
}

/// Sends `part` to its owner: forwarded to a peer, or appended here. A
/// local append joins `local` and a forward joins `remote` when given (the
/// caller hands the request's local appends over in one append_direct call
/// and its forwards in one request per owner), else each goes at once.
void route_part(const client_context& ctx, std::shared_ptr<produce_gather> gather, std::shared_ptr<produce_part> part,
                std::vector<direct_append>* local, forwards* remote) {
  // A hint naming this broker adds nothing to its own table (and would send
  // the part to a sealed local copy, possibly busy discarding its data).
  if (unowned(ctx, part->topic, part->partition)) {
    gather->part_failed(offline_response(part->topic, part->partition));
    return;
  }
  auto owner = remote_owner(ctx, part->topic, part->partition);
  if (!part->owner_hint.empty() && part->owner_hint != ctx.broker_id)
    owner = part->owner_hint;
  if (owner) {
    if (remote)
      (*remote)[*owner].push_back(std::move(part));
    else
      forward_parts(ctx, gather, {std::move(part)}, *owner);
    return;
  }
  auto topics = ctx.catalog->get();
  auto t = topics->find(part->topic);
  if (t == topics->end() || static_cast<size_t>(part->partition) >= t->second.partitions.size()) {
    // The image names this broker owner, but its copy is still being made
    // (the entry was applied a moment ago): retriable.
    if (partition_count(ctx, part->topic).value_or(0) > part->partition) {
      gather->part_failed(http_response::error(503, "partition_not_ready", part->topic + "/"
                                                                              + std::to_string(part->partition)
                                                                              + " is being created on broker "
                                                                              + ctx.broker_id + "; retry"));
      return;
    }
    gather->part_failed(http_response::error(404, "unknown_partition", "no partition " + part->topic + "/"
                                                                           + std::to_string(part->partition)));
    return;
  }
  direct_append a{
    t->second.partitions[static_cast<size_t>(part->partition)], part->batch, part->durable,
    [gather, part](int64_t base) { gather->part_done(part->index, base); },
    [ctx, gather, part](const caf::error& e) {
      if (e.category() == caf::atom("moonmq") && static_cast<errc>(e.code()) == errc::partition_moved) {
        part->owner_hint.clear();  // sealed here: this broker's table decides again
        route_later(ctx, gather, part, error_response(e));
      }
      else
        gather->part_failed(error_response(e));
    }};
  if (local) {
    local->push_back(std::move(a));
  } else {
    std::vector<direct_append> one;  // not an initializer list: that would copy the batch
    one.push_back(std::move(a));
    append_direct(*ctx.system, std::move(one), ctx.timeout);
  }
}

void produce(const client_context& ctx, http_request& req, const responder& respond,
             std::atomic<uint32_t>& sticky) {
  const auto& topic = req.params["topic"];
  auto count = partition_count(ctx, topic);
  if (!count) {
    respond(http_response::error(404, "unknown_topic", "unknown topic " + topic));
    return;
  }
  bool durable = true;
  if (auto a = req.query.find("acks"); a != req.query.end()) {
    if (a->second == "none" || a->second == "0")
      durable = false;
    else if (a->second != "leader" && a->second != "1" && a->second != "all" && a->second != "-1") {
      respond(http_response::error(400, "invalid_request", "acks must be none or leader"));
      return;
    }
  }
  std::string client;
  if (!session_client(req, respond, client))
    return;
  auto n = *count;
  dataplane::produce_plan plan;
  auto sticky_partition = static_cast<int32_t>(sticky.fetch_add(1) % static_cast<uint32_t>(n));
  if (const auto* type = req.header("content-type"); type && dataplane::names_records_binary(*type)) {
    if (ctx.sessions)
      ctx.sessions->produced(client, req.body.size());
    if (auto e = dataplane::parse_produce_binary(req.body, n, sticky_partition, util::wall_ms(), plan)) {
      json why{{"error", "invalid_request"}, {"message", e.to_string()}, {"position", e.position}};
      respond(http_response::json(400, why.dump()));
      return;
    }
  } else {
    bool malformed = false;
    auto why = dataplane::parse_produce(req.body, n, sticky_partition, util::wall_ms(), plan, malformed);
    if (malformed) {
      respond(http_response::error(400, "malformed_json", why));
      return;
    }
    if (ctx.sessions)
      ctx.sessions->produced(client, req.body.size());
    if (!why.empty()) {
      respond(http_response::error(400, "invalid_request", why));
      return;
    }
  }
  auto gather = std::make_shared<produce_gather>();
  gather->respond = respond;
  gather->pending = plan.by_partition.size();
  gather->bases.assign(plan.by_partition.size(), -1);
  std::vector<int32_t> order;
  std::vector<std::shared_ptr<produce_part>> parts;
  auto deadline = std::chrono::steady_clock::now() + ctx.timeout;
  for (auto& [p, records] : plan.by_partition) {
    auto batch = storage::encode_batch(records);
    if (!batch) {
      respond(http_response::error(400, "invalid_request", batch.err().message));
      return;
    }
    auto part = std::make_shared<produce_part>();
    part->index = order.size();
    part->topic = topic;
    part->partition = p;
    part->batch = std::move(batch.value());
    part->durable = durable;
    part->deadline = deadline;
    order.push_back(p);
    parts.push_back(std::move(part));
  }
  auto placement = std::move(plan.placement);
  gather->ok = [respond, placement, order](std::vector<int64_t>& bases) {
    std::map<int32_t, int64_t> base_of;
    for (size_t i = 0; i < order.size(); ++i)
      base_of[order[i]] = bases[i];
    respond(http_response::json(200, dataplane::offsets_json(placement, base_of)));
  };
  std::vector<direct_append> local;
  forwards remote;
  for (auto& part : parts)
    route_part(ctx, gather, part, &local, &remote);
  append_direct(*ctx.system, std::move(local), ctx.timeout);
  // A pipelined produce behind this one starts once this handler returns
  // (pipelining::together): its local appends reach each partition after
  // these. Forwards go out on any of several peer connections, so a request
  // that forwards holds the pipeline until it is answered.
  if (!remote.empty())
    req.hold_pipeline = true;
  for (auto& [owner, owned] : remote) {
    // Split at forward_request_bytes, so that a request of many small
    // records (whose batches outweigh their JSON) stays far below the
    // owner's body limit.
    std::vector<std::shared_ptr<produce_part>> chunk;
    size_t bytes = 0;
    for (auto& part : owned) {
      if (!chunk.empty() && bytes + part->batch.size() > forward_request_bytes) {
        forward_parts(ctx, gather, std::move(chunk), owner);
        chunk.clear();
        bytes = 0;
      }
      bytes += part->batch.size();
      chunk.push_back(std::move(part));
    }
    forward_parts(ctx, gather, std::move(chunk), owner);
  }
}

// --- fetch ---------------------------------------------------------------------

struct fetch_job {
  partition_actor partition;
  std::optional<int64_t> from;
  int64_t max_records = 500;
  int32_t max_bytes = 0;
  milliseconds timeout;
  responder respond;
  std::shared_ptr<session_probe> sessions;  ///< null = not metered
  std::string client;
  bool binary = false;  ///< answer in the binary form (Accept names it)
  /// `isolation=read_committed`: read up to the last stable offset, leave
  /// out the records of aborted transactions (docs/transactions.md).
  bool committed = false;
};

/// `committed` and `lso` (the last stable offset) only for read_committed.
void answer_fetch(const fetch_job& job, int64_t from, std::string& batches, int64_t log_start, int64_t log_end,
                  storage::committed_filter* committed = nullptr, int64_t lso = -1) {
  if (job.binary) {
    http_response res;
    res.content_type = std::string(dataplane::records_binary_type);
    if (lso >= 0)
      res.headers.emplace_back("X-Last-Stable-Offset", std::to_string(lso));
    dataplane::records_to_binary(batches, from, static_cast<size_t>(job.max_records), log_start, log_end, res.body,
                                 committed);
    if (job.sessions)
      job.sessions->fetched(job.client, res.body.size());
    job.respond(std::move(res));
    return;
  }
  std::string text;
  dataplane::fetch_answer_json(batches, from, static_cast<size_t>(job.max_records), log_start, log_end, text,
                               committed, lso);
  if (job.sessions)
    job.sessions->fetched(job.client, text.size());
  job.respond(http_response::json(200, std::move(text)));
}

void fetch_actor(caf::event_based_actor* self, std::shared_ptr<fetch_job> job) {
  auto read = [self, job](int64_t from) {
    if (job->committed) {
      self->request(job->partition, job->timeout, read_atom::value, from, job->max_bytes, true, true)
        .then(
          [job, from](std::string& batches, int64_t lo, int64_t hi, int64_t lso, std::vector<int64_t>& aborted) {
            std::vector<storage::aborted_range> ranges;
            for (size_t i = 0; i + 1 < aborted.size(); i += 2)
              ranges.push_back({aborted[i], storage::offset{aborted[i + 1]}});
            storage::committed_filter filter(std::move(ranges));
            answer_fetch(*job, from, batches, lo, hi, &filter, lso);
          },
          [job](caf::error& e) { job->respond(error_response(e)); });
      return;
    }
    self->request(job->partition, job->timeout, read_atom::value, from, job->max_bytes)
      .then([job, from](std::string& batches, int64_t lo, int64_t hi) { answer_fetch(*job, from, batches, lo, hi); },
            [job](caf::error& e) { job->respond(error_response(e)); });
  };
  if (job->from) {
    read(*job->from);
    return;
  }
  self->request(job->partition, job->timeout, bounds_atom::value)
    .then([read](int64_t lo, int64_t, int64_t) { read(lo); },
          [job](caf::error& e) { job->respond(error_response(e)); });
}

}  // namespace

std::optional<partition_actor> owned_partition(const client_context& ctx, http_request& req,
                                               const responder& respond) {
  const auto& topic = req.params["topic"];
  auto count = partition_count(ctx, topic);
  if (!count) {
    respond(http_response::error(404, "unknown_topic", "unknown topic " + topic));
    return std::nullopt;
  }
  const auto& raw = req.params["partition"];
  if (raw.empty() || raw.size() > 6 || raw.find_first_not_of("0123456789") != std::string::npos
      || std::stoi(raw) >= *count) {
    respond(http_response::error(404, "unknown_partition", "topic " + topic + " has no partition '" + raw + "'"));
    return std::nullopt;
  }
  auto partition = std::stoi(raw);
  if (unowned(ctx, topic, partition)) {
    respond(offline_response(topic, partition));
    return std::nullopt;
  }
  if (auto owner = remote_owner(ctx, topic, partition)) {
    respond(not_owner_response(ctx, topic, partition, *owner));
    return std::nullopt;
  }
  auto topics = ctx.catalog->get();
  auto t = topics->find(topic);
  if (t == topics->end() || partition >= static_cast<int>(t->second.partitions.size())) {
    respond(http_response::error(503, "partition_not_ready", topic + "/" + raw + " is being created on broker "
                                                                 + ctx.broker_id + "; retry"));
    return std::nullopt;
  }
  return t->second.partitions[static_cast<size_t>(partition)];
}

namespace {

void fetch(const client_context& ctx, http_request& req, const responder& respond) {
  auto part = owned_partition(ctx, req, respond);
  if (!part)
    return;
  bool bad = false;
  auto job = std::make_shared<fetch_job>();
  job->partition = *part;
  job->from = query_int(req, "offset", respond, bad);
  if (bad)
    return;
  auto max_records = query_int(req, "max_records", respond, bad);
  if (bad)
    return;
  job->max_records = std::clamp<int64_t>(max_records.value_or(500), 1, 10000);
  if (auto it = req.query.find("isolation"); it != req.query.end()) {
    if (it->second != "read_committed" && it->second != "read_uncommitted") {
      respond(http_response::error(400, "invalid_request",
                                   "isolation must be read_committed or read_uncommitted, not '" + it->second + "'"));
      return;
    }
    job->committed = it->second == "read_committed";
  }
  job->max_bytes = ctx.max_fetch_bytes;
  job->timeout = ctx.timeout;
  job->respond = respond;
  if (!session_client(req, respond, job->client))
    return;
  job->sessions = ctx.sessions;
  if (const auto* accept = req.header("accept"))
    job->binary = dataplane::names_records_binary(*accept, true);
  ctx.system->spawn(fetch_actor, job);
}

// --- topics ----------------------------------------------------------------------

/// Reads a partition count (`key` of `body`, `fallback` when absent) in
/// 1..max_partitions; answers 400 and returns nullopt otherwise.
std::optional<int32_t> partition_count(const json& body, const char* key, std::optional<int64_t> fallback,
                                       const responder& respond) {
  int64_t n = fallback.value_or(0);
  if (body.contains(key)) {
    if (!body[key].is_number_integer()) {
      respond(http_response::error(400, "invalid_request", std::string(key) + " must be an integer"));
      return std::nullopt;
    }
    n = body[key].get<int64_t>();
  } else if (!fallback) {
    respond(http_response::error(400, "invalid_request", std::string("body must have \"") + key + "\""));
    return std::nullopt;
  }
  if (n < 1 || n > dataplane::max_partitions) {
    respond(http_response::error(400, "invalid_request", std::string(key) + " must be between 1 and "
                                                           + std::to_string(dataplane::max_partitions)));
    return std::nullopt;
  }
  return static_cast<int32_t>(n);
}

void create_topic(const client_context& ctx, http_request& req, const responder& respond) {
  json body;
  if (!parse_body(req, respond, body))
    return;
  if (!body.is_object() || !body.contains("name") || !body["name"].is_string()) {
    respond(http_response::error(400, "invalid_request", "body must be {\"name\":...,\"partitions\":...}"));
    return;
  }
  // Kafka's num.partitions for a create without a count.
  auto fallback = ctx.owners ? config::num_partitions_with(ctx.default_partitions,
                                                           json::parse(*ctx.owners->balancer(), nullptr, false))
                             : ctx.default_partitions;
  auto partitions = partition_count(body, "partitions", fallback, respond);
  if (!partitions)
    return;
  std::string config = body.contains("config") && !body["config"].is_null() ? body["config"].dump() : "";
  auto name = body["name"].get<std::string>();
  auto done = [respond, name, n = *partitions](bool& created) {
    respond(http_response::json(created ? 201 : 200, json{{"name", name}, {"partitions", n}}.dump()));
  };
  if (ctx.metadata)  // committed to the metadata log, then created on every broker
    ask<bool>(*ctx.system, *ctx.metadata, ctx.timeout, done, fail_with(respond), create_atom::value, name,
              *partitions, config);
  else
    ask<bool>(*ctx.system, ctx.broker, ctx.timeout, done, fail_with(respond), create_atom::value, name, *partitions,
              config);
}

void grow_topic(const client_context& ctx, http_request& req, const responder& respond) {
  json body;
  if (!parse_body(req, respond, body))
    return;
  if (!body.is_object()) {
    respond(http_response::error(400, "invalid_request", "body must be {\"count\":<integer>}"));
    return;
  }
  auto count = partition_count(body, "count", std::nullopt, respond);
  if (!count)
    return;
  auto name = req.params["topic"];
  if (ctx.metadata) {  // every broker applies the growth from the metadata log
    ask<int32_t>(
      *ctx.system, *ctx.metadata, ctx.timeout,
      [respond, name](int32_t& n) { respond(http_response::json(200, json{{"name", name}, {"partitions", n}}.dump())); },
      fail_with(respond), grow_atom::value, name, *count);
    return;
  }
  // A single broker (no Cluster section): nobody to tell.
  ask<int32_t>(
    *ctx.system, ctx.broker, ctx.timeout,
    [respond, name](int32_t& n) { respond(http_response::json(200, json{{"name", name}, {"partitions", n}}.dump())); },
    fail_with(respond), grow_atom::value, name, *count);
}

/// DELETE /v1/topics/{topic}: through the metadata log in a cluster (every
/// broker then removes its copy), on this broker alone without one.
void delete_topic(const client_context& ctx, http_request& req, const responder& respond) {
  auto name = req.params["topic"];
  auto done = [respond, name](bool& existed) {
    if (!existed) {
      respond(http_response::error(404, "unknown_topic", "unknown topic " + name));
      return;
    }
    respond(http_response::json(200, json{{"name", name}, {"deleted", true}}.dump()));
  };
  if (ctx.metadata)
    ask<bool>(*ctx.system, *ctx.metadata, ctx.timeout, done, fail_with(respond), delete_atom::value, name);
  else
    ask<bool>(*ctx.system, ctx.broker, ctx.timeout, done, fail_with(respond), delete_atom::value, name, int64_t{-1});
}

void list_topics(const client_context& ctx, const responder& respond) {
  // The local copies, and with the metadata log every topic the image holds
  // (some may not have a local copy yet; produce and fetch route them).
  std::map<std::string, int32_t> names;
  auto local = ctx.catalog->get();
  for (const auto& [name, t] : *local)
    names[name] = static_cast<int32_t>(t.partitions.size());
  if (ctx.owners) {
    auto image = ctx.owners->topics();  // held for the loop (never `*ctx.owners->topics()` in a range-for)
    for (const auto& [name, t] : *image)
      names[name] = std::max(names[name], t.partitions);
  }
  json list = json::array();
  for (const auto& [name, n] : names)
    list.push_back(json{{"name", name}, {"partitions", n}});
  respond(http_response::json(200, json{{"topics", list}}.dump()));
}

}  // namespace

bool unowned(const client_context& ctx, const std::string& topic, int32_t partition) {
  return ctx.owners
         && ctx.owners->route(ctx.broker_id, cluster::topic_partition{topic, partition}).where
              == partition_route::kind::unowned;
}

std::optional<int32_t> partition_count(const client_context& ctx, const std::string& topic) {
  std::optional<int32_t> n;
  auto local = ctx.catalog->get();
  if (auto t = local->find(topic); t != local->end())
    n = static_cast<int32_t>(t->second.partitions.size());
  if (ctx.owners) {
    auto image = ctx.owners->topics();
    if (auto t = image->find(topic); t != image->end())
      n = std::max(n.value_or(0), t->second.partitions);
  }
  return n;
}

http_response offline_response(const std::string& topic, int32_t partition) {
  return http_response::error(503, "partition_offline",
                              topic + "/" + std::to_string(partition)
                                + " has no owner in the metadata log; no broker serves it");
}

std::optional<std::string> remote_owner(const client_context& ctx, const std::string& topic, int32_t partition) {
  if (!ctx.owners)
    return std::nullopt;
  return ctx.owners->owner_other_than(ctx.broker_id, cluster::topic_partition{topic, partition});
}

http_response not_owner_response(const client_context& ctx, const std::string& topic, int32_t partition,
                                 const std::string& owner) {
  auto peer = ctx.peers->find(owner);
  std::string url = peer && !peer->client_address.empty() ? "http://" + peer->client_address : "";
  json j{{"error", "not_owner"},
         {"message", topic + "/" + std::to_string(partition) + " is owned by broker " + owner},
         {"owner", owner},
         {"url", url.empty() ? json(nullptr) : json(url)}};
  return http_response::json(421, j.dump());
}

void add_client_routes(router& r, const client_context& ctx) {
  auto sticky = std::make_shared<std::atomic<uint32_t>>(0);
  r.add("POST", "/v1/topics", [ctx](http_request& req, responder respond) { create_topic(ctx, req, respond); });
  r.add("GET", "/v1/topics", [ctx](http_request&, responder respond) { list_topics(ctx, respond); });
  r.add("DELETE", "/v1/topics/{topic}",
        [ctx](http_request& req, responder respond) { delete_topic(ctx, req, respond); });
  r.add("POST", "/v1/topics/{topic}/partitions",
        [ctx](http_request& req, responder respond) { grow_topic(ctx, req, respond); });
  r.add(
    "POST", "/v1/topics/{topic}/records",
    [ctx, sticky](http_request& req, responder respond) { produce(ctx, req, respond, *sticky); },
    pipelining::together);
  r.add("GET", "/v1/topics/{topic}/partitions/{partition}/records",
        [ctx](http_request& req, responder respond) { fetch(ctx, req, respond); });
  add_topic_routes(r, ctx);  // api/topic_routes.cpp (describe, config)
  add_group_routes(r, ctx);  // api/group_routes.cpp (cluster-wide groups)
}

}  // namespace moonmq::transport
