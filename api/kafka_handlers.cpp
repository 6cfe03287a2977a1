#include "api/kafka_handlers.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <random>
#include <set>

#include <nlohmann/json.hpp>

#include <caf/all.hpp>

#include "actors/ask.hpp"
#include "actors/direct_append.hpp"
#include "actors/errors.hpp"
#include "cluster/partition_map.hpp"
#include "config/dynamic.hpp"
#include "dataplane/topic_name.hpp"
#include "kafka/produce_validation.hpp"
#include "net/http_client.hpp"
#include "api/kafka_admin.hpp"
#include "api/kafka_groups.hpp"
#include "api/kafka_txn.hpp"
#include "util/logging.hpp"

namespace moonmq::transport {
namespace {

/// Kafka's num.partitions: the metadata log's NumPartitions (PATCH
/// /admin/balancer) when set, else Cluster.NumPartitions.
static_assert(config::max_num_partitions == dataplane::max_partitions,
              "NumPartitions is bounded by the largest topic a create accepts");

int32_t num_partitions(const kafka_context& ctx) {
  if (!ctx.owners)
    return ctx.default_partitions;
  return config::num_partitions_with(ctx.default_partitions, nlohmann::json::parse(*ctx.owners->balancer(), nullptr, false));
}

}  // namespace

int32_t kafka_num_partitions(const kafka_context& ctx) { return num_partitions(ctx); }

namespace {

using std::chrono::milliseconds;
namespace ec = kafka::error_code;

/// KAFKA_STORAGE_ERROR: the partition's log failed or is offline.
constexpr int16_t kafka_storage_error = 56;

using gather = kafka_gather;

/// How many partitions of a Produce/Fetch/ListOffsets answer carry an error.
template <class Response>
int partition_errors(const Response& r) {
  int n = 0;
  for (const auto& t : r.topics)
    for (const auto& p : t.partitions)
      n += p.error_code != 0;
  return n;
}

}  // namespace

int16_t kafka_locate(const kafka_context& ctx, const topic_map& topics, const std::string& topic, int32_t partition,
                     partition_actor& out) {
  auto t = topics.find(topic);
  if (t == topics.end() || partition < 0 || static_cast<size_t>(partition) >= t->second.partitions.size())
    return ec::unknown_topic_or_partition;
  if (ctx.owners
      && ctx.owners->route(ctx.broker_id, cluster::topic_partition{topic, partition}).where
           == partition_route::kind::unowned)
    return ec::leader_not_available;  // the metadata log names no owner: nobody serves it
  if (kafka_remote_owner(ctx, topic, partition))
    return ec::not_leader_or_follower;
  out = t->second.partitions[static_cast<size_t>(partition)];
  return ec::none;
}

int16_t kafka_code_of(const caf::error& e) {
  if (e.category() == caf::atom("system") && static_cast<caf::sec>(e.code()) == caf::sec::request_timeout)
    return ec::request_timed_out;
  if (e.category() == caf::atom("system") && static_cast<caf::sec>(e.code()) == caf::sec::request_receiver_down)
    return ec::not_leader_or_follower;
  if (e.category() != caf::atom("moonmq"))
    return ec::unknown_server_error;
  switch (static_cast<errc>(e.code())) {
    case errc::coded:
    case errc::relayed: {
      auto code = error_code_of(e);
      if (code == "out_of_order_sequence")
        return ec::out_of_order_sequence_number;
      if (code == "invalid_producer_epoch")
        return ec::invalid_producer_epoch;
      return ec::unknown_server_error;
    }
    case errc::invalid_producer_epoch:
      return ec::invalid_producer_epoch;
    case errc::partition_moved:
      return ec::not_leader_or_follower;
    case errc::offset_out_of_range:
      return ec::offset_out_of_range;
    case errc::unknown_topic:
    case errc::unknown_partition:
      return ec::unknown_topic_or_partition;
    case errc::invalid_request:
      return ec::invalid_record;
    case errc::storage_error:
    case errc::partition_offline:
      return kafka_storage_error;
    case errc::not_ready:
      return ec::leader_not_available;
    default:
      return ec::unknown_server_error;
  }
}

namespace {

/// Asks a partition for a reply of the values `Rs` (reads, bounds, the LSO).
template <class... Rs>
struct partition_ask {
  template <class... Ts>
  static void run(caf::event_based_actor* self, partition_actor dest, milliseconds timeout,
                  std::function<void(Rs&...)> ok, std::function<void(const caf::error&)> fail, Ts... xs) {
    self->request(dest, timeout, std::move(xs)...)
      .then([ok](Rs&... rs) { ok(rs...); }, [fail](caf::error& e) { fail(e); });
  }
  template <class... Ts>
  static void call(caf::actor_system& sys, const partition_actor& dest, milliseconds timeout,
                   std::function<void(Rs&...)> ok, std::function<void(const caf::error&)> fail, Ts... xs) {
    sys.spawn(run<Ts...>, dest, timeout, std::move(ok), std::move(fail), std::move(xs)...);
  }
};
using ask3 = partition_ask<int64_t, int64_t, int64_t>;

// --- ApiVersions, Metadata, CreateTopics, InitProducerId -------------------

/// A Metadata request for every topic (v0: an empty list; v1+: null).
bool all_topics(int16_t version, const kafka::metadata_request& req) {
  return !req.topics || (version == 0 && req.topics->empty());
}

/// Topics held by other brokers, for Metadata: a topic lives on the brokers
/// that hold its partitions (docs/cluster.md), but a Kafka client takes any
/// broker's Metadata for the whole cluster's.
struct peer_topics {
  std::mutex mtx;
  std::map<std::string, int32_t> counts;                    ///< topic → partition count (largest reported)
  std::vector<cluster::partition_report> reports;          ///< every peer's partitions with their owners
  bool complete = true;                                    ///< every peer answered
  std::map<cluster::topic_partition, std::string> owners;  ///< merged once all answered
};

/// Asks every peer's GET /cluster/loads (at most 2 s each, in parallel) and
/// calls `done` with what they hold; owners merged as /admin/cluster does
/// (cluster::merge_partition_reports).
void survey_peer_topics(const std::shared_ptr<kafka_context>& ctx,
                        std::function<void(std::shared_ptr<peer_topics>)> done) {
  auto found = std::make_shared<peer_topics>();
  auto peers = ctx->peers->all();
  auto g = gather::make(peers.size(), [found, done] {
    for (const auto& [tp, placement] : cluster::merge_partition_reports(found->reports))
      found->owners[tp] = placement.owner.str();
    done(found);
  });
  for (const auto& p : peers)
    kafka_peer_call(*ctx, p.id, "GET", "/cluster/loads", {}, [g, found](int status, std::string body) {
      auto j = status == 200 ? nlohmann::json::parse(body, nullptr, false) : nlohmann::json{};
      {
        std::lock_guard<std::mutex> lock{found->mtx};
        if (!j.is_object() || !j.contains("topics") || !j["topics"].is_array()) {
          found->complete = false;
        } else {
          for (const auto& t : j["topics"])
            if (t.is_object() && t.contains("name") && t["name"].is_string() && t.contains("partitions")
                && t["partitions"].is_number_integer()) {
              auto& n = found->counts[t["name"].get<std::string>()];
              n = std::max(n, t["partitions"].get<int32_t>());
            }
          auto reports = cluster::parse_loads(j);
          found->reports.insert(found->reports.end(), reports.begin(), reports.end());
        }
      }
      g->one();  // the last answer runs the rest of Metadata: not under the lock
    }, std::min<milliseconds>(ctx->timeout, milliseconds{2000}));
}

kafka::metadata_response build_metadata(const kafka_context& ctx, int16_t version, const kafka::metadata_request& req,
                                        const peer_topics* remote) {
  kafka::metadata_response resp;
  resp.cluster_id = kafka_cluster_id;
  resp.controller_id = kafka_controller_id(ctx);
  std::set<std::string> listed;
  resp.brokers = kafka_brokers(ctx, listed);
  auto topics = ctx.catalog->get();
  auto owners = ctx.owners ? ctx.owners->get() : std::make_shared<const owner_map>();
  auto fenced = ctx.owners ? ctx.owners->fenced() : nullptr;
  auto describe = [&](const std::string& name) {
    kafka::metadata_topic mt;
    mt.name = name;
    auto t = topics->find(name);
    size_t count = 0;
    bool local = t != topics->end();
    auto image = ctx.owners ? ctx.owners->topics() : nullptr;
    auto logged = image ? image->find(name) : topic_image::const_iterator{};
    if (image && logged != image->end()) {
      // The metadata log knows it: its count and owners hold cluster-wide.
      count = static_cast<size_t>(logged->second.partitions);
      local = true;
    } else if (local) {
      count = t->second.partitions.size();
    } else if (remote && remote->counts.count(name)) {
      count = static_cast<size_t>(std::max(0, remote->counts.at(name)));
    } else {
      // Not held here nor by any peer that answered; while a peer is
      // silent the topic may be there: retriable.
      mt.error_code = remote && !remote->complete ? ec::leader_not_available : ec::unknown_topic_or_partition;
      return mt;
    }
    mt.is_internal = dataplane::is_internal_topic(name);
    for (size_t i = 0; i < count; ++i) {
      kafka::metadata_partition mp;
      mp.partition_index = static_cast<int32_t>(i);
      cluster::topic_partition tp{name, static_cast<int32_t>(i)};
      std::string owner;
      if (local) {
        auto o = owners->find(tp);
        owner = o != owners->end() ? o->second : ctx.owners ? std::string{} : ctx.broker_id;
      } else if (auto o = remote->owners.find(tp); o != remote->owners.end()) {
        owner = o->second;
      }
      if (fenced && fenced->count(owner)) {
        mp.error_code = ec::leader_not_available;  // its owner is fenced: offline until it returns
        mp.leader_id = -1;
      } else if (listed.count(owner)) {
        mp.leader_id = kafka_node_id(ctx, owner);
        mp.replica_nodes = {mp.leader_id};
        mp.isr_nodes = {mp.leader_id};
      } else {
        mp.error_code = ec::leader_not_available;  // owner's Kafka address unknown (KafkaAddress)
        mp.leader_id = -1;
      }
      mt.partitions.push_back(std::move(mp));
    }
    return mt;
  };
  if (all_topics(version, req)) {
    std::set<std::string> names;
    for (const auto& [name, t] : *topics)
      names.insert(name);
    if (remote)
      for (const auto& [name, n] : remote->counts)
        names.insert(name);
    for (const auto& name : names)
      resp.topics.push_back(describe(name));
  } else {
    for (const auto& name : *req.topics)
      resp.topics.push_back(describe(name));
  }
  return resp;
}

void metadata_with(const std::shared_ptr<kafka_context>& ctx, int16_t version,
                   std::shared_ptr<kafka::metadata_request> req, std::shared_ptr<peer_topics> remote,
                   kafka_done done);

void metadata(const std::shared_ptr<kafka_context>& ctx, int16_t version, kafka::metadata_request req,
              kafka_done done) {
  auto shared_req = std::make_shared<kafka::metadata_request>(std::move(req));
  auto topics = ctx->catalog->get();
  bool ask_peers = !ctx->peers->empty() && all_topics(version, *shared_req);
  if (!ask_peers && shared_req->topics && !ctx->peers->empty())
    for (const auto& name : *shared_req->topics)
      ask_peers = ask_peers || !topics->count(name);
  if (!ask_peers) {
    metadata_with(ctx, version, shared_req, nullptr, std::move(done));
    return;
  }
  survey_peer_topics(ctx, [ctx, version, shared_req, done](std::shared_ptr<peer_topics> remote) {
    metadata_with(ctx, version, shared_req, std::move(remote), done);
  });
}

/// Metadata once the peers' topics are known (`remote`, null without peers
/// or when every requested topic is held here).
void metadata_with(const std::shared_ptr<kafka_context>& ctx, int16_t version,
                   std::shared_ptr<kafka::metadata_request> req, std::shared_ptr<peer_topics> remote,
                   kafka_done done) {
  // Auto-creation (Kafka auto.create.topics.enable): producers ask for it
  // (v4 flag; always on before v4). Only a topic no broker holds, and only
  // when every peer answered (else it may exist on a silent one).
  std::vector<std::string> missing;
  if (req->topics && (version < 4 || req->allow_auto_topic_creation) && (!remote || remote->complete)) {
    auto topics = ctx->catalog->get();
    for (const auto& name : *req->topics)
      if (!topics->count(name) && !(remote && remote->counts.count(name))
          && dataplane::check_topic_name(name).empty())
        missing.push_back(name);
  }
  auto g = gather::make(missing.size(), [ctx, version, req, remote, done] {
    auto resp = build_metadata(*ctx, version, *req, remote.get());
    int errors = 0;
    for (const auto& t : resp.topics)
      errors += t.error_code != 0;
    done(std::move(resp), errors);
  });
  for (const auto& name : missing)
    kafka_create_topic(
      *ctx, name, num_partitions(*ctx), {},
      [g, name](bool&) {
        log::get("transport")->info("kafka.topic_auto_created topic={}", name);
        g->one();
      },
      [g, name](const caf::error& e) {
        log::get("transport")->warn("kafka.topic_auto_create_failed topic={} error=\"{}\"", name, message_of(e));
        g->one();
      });
}

// --- Produce -------------------------------------------------------------------

void produce(const std::shared_ptr<kafka_context>& ctx, int16_t version, kafka::produce_request req,
             kafka_done done) {
  auto resp = std::make_shared<kafka::produce_response>();
  size_t parts = 0;
  for (const auto& t : req.topics) {
    resp->topics.push_back({t.name, {}});
    for (const auto& p : t.partitions) {
      kafka::produce_partition_response r;
      r.index = p.index;
      resp->topics.back().partitions.push_back(r);
      ++parts;
    }
  }
  auto acks = req.acks;
  auto g = gather::make(parts, [resp, acks, done] {
    int errors = partition_errors(*resp);
    if (acks == 0)
      done(std::nullopt, errors);
    else
      done(std::move(*resp), errors);
  });
  if (parts == 0)
    return;
  if (acks != 0 && acks != 1 && acks != -1) {
    for (auto& t : resp->topics)
      for (auto& p : t.partitions) {
        p.error_code = ec::invalid_required_acks;
        g->one();
      }
    return;
  }
  auto topics = ctx->catalog->get();
  // One message per I/O worker for the whole request, in request order
  // (actors/direct_append.hpp).
  std::vector<direct_append> appends;
  for (size_t ti = 0; ti < req.topics.size(); ++ti) {
    auto& t = req.topics[ti];
    for (size_t pi = 0; pi < t.partitions.size(); ++pi) {
      auto& p = t.partitions[pi];
      auto* slot = &resp->topics[ti].partitions[pi];
      partition_actor actor;
      if (auto code = kafka_locate(*ctx, *topics, t.name, p.index, actor); code != 0) {
        slot->error_code = code;
        g->one();
        continue;
      }
      kafka::produce_validation_options vo;
      vo.produce_version = version;
      auto batches = kafka::validate_produce_records(p.records ? std::optional<std::string_view>(*p.records)
                                                               : std::nullopt,
                                                     vo);
      if (!batches) {
        slot->error_code = batches.err().kafka_code != 0 ? batches.err().kafka_code : ec::invalid_record;
        g->one();
        continue;
      }
      const auto info = batches->front();  // single_batch: exactly one
      if (info.transactional && (info.producer_id < 0 || info.base_sequence < 0)) {
        slot->error_code = ec::invalid_record;  // a transaction's batch names its producer
        g->one();
        continue;
      }
      // The partition judges idempotent and transactional batches
      // (sequence, epoch, resends) against the producer state kept with
      // its log, and records the transactions they open
      // (docs/transactions.md).
      auto ok = [g, slot](int64_t base) {
        slot->base_offset = base;
        g->one();
      };
      auto fail = [g, slot](const caf::error& e) {
        slot->error_code = kafka_code_of(e);
        g->one();
      };
      // validate_produce_records parsed the batch in full (CRC included):
      // the worker checks its framing only.
      appends.push_back(
        direct_append{actor, std::move(*p.records), acks != 0, ok, fail, storage::batch_check::verified});
    }
  }
  append_direct(*ctx->system, std::move(appends), ctx->timeout);
}

// --- Fetch (long poll) ----------------------------------------------------------

struct fetch_job : std::enable_shared_from_this<fetch_job> {
  std::shared_ptr<kafka_context> ctx;
  kafka::fetch_request req;
  std::chrono::steady_clock::time_point deadline;
  kafka_done done;

  void attempt() {
    auto resp = std::make_shared<kafka::fetch_response>();
    size_t parts = 0;
    for (const auto& t : req.topics) {
      resp->topics.push_back({t.topic, {}});
      for (const auto& p : t.partitions) {
        kafka::fetch_partition_response r;
        r.partition = p.partition;
        r.records = std::string{};
        resp->topics.back().partitions.push_back(std::move(r));
        ++parts;
      }
    }
    auto self = shared_from_this();
    auto g = gather::make(parts, [self, resp] { self->answer(resp); });
    if (parts == 0)
      return;
    auto topics = ctx->catalog->get();
    for (size_t ti = 0; ti < req.topics.size(); ++ti) {
      const auto& t = req.topics[ti];
      for (size_t pi = 0; pi < t.partitions.size(); ++pi) {
        const auto& p = t.partitions[pi];
        auto* slot = &resp->topics[ti].partitions[pi];
        partition_actor actor;
        if (auto code = kafka_locate(*ctx, *topics, t.topic, p.partition, actor); code != 0) {
          slot->error_code = code;
          g->one();
          continue;
        }
        auto max = std::max<int32_t>(p.partition_max_bytes, 1);
        // read_committed (isolation 1) stops at the last stable offset and
        // lists the aborted transactions of what it returns; both levels
        // answer the real LSO (docs/transactions.md).
        const bool committed = req.isolation_level == 1;
        partition_ask<std::string, int64_t, int64_t, int64_t, std::vector<int64_t>>::call(
          *ctx->system, actor, ctx->timeout,
          [g, slot, committed](std::string& batches, int64_t& lo, int64_t& hw, int64_t& lso,
                               std::vector<int64_t>& aborted) {
            slot->records = std::move(batches);
            slot->high_watermark = hw;
            slot->last_stable_offset = lso;
            slot->log_start_offset = lo;
            if (committed) {
              slot->aborted_transactions.emplace();
              for (size_t i = 0; i + 1 < aborted.size(); i += 2)
                slot->aborted_transactions->push_back({aborted[i], aborted[i + 1]});
            }
            g->one();
          },
          [g, slot](const caf::error& e) {
            slot->error_code = kafka_code_of(e);
            int64_t lo = -1, hi = -1;
            if (out_of_range_bounds(e, lo, hi)) {
              slot->high_watermark = hi;
              slot->last_stable_offset = hi;
              slot->log_start_offset = lo;
            }
            g->one();
          },
          read_atom::value, p.fetch_offset, max, true, committed);
      }
    }
  }

  void answer(const std::shared_ptr<kafka::fetch_response>& resp) {
    int64_t bytes = 0;
    int errors = 0;
    bool first = true;
    // The response byte limit: whole partitions, but always the first batch.
    for (auto& t : resp->topics)
      for (auto& p : t.partitions) {
        errors += p.error_code != 0;
        auto size = static_cast<int64_t>(p.records ? p.records->size() : 0);
        if (size == 0)
          continue;
        if (!first && bytes + size > req.max_bytes)
          p.records = std::string{};
        else
          bytes += size;
        first = false;
      }
    auto now = std::chrono::steady_clock::now();
    if (errors == 0 && bytes < std::max<int32_t>(req.min_bytes, 1) && now < deadline && ctx->schedule) {
      auto wait = std::min<milliseconds>(milliseconds{10},
                                         std::chrono::duration_cast<milliseconds>(deadline - now));
      ctx->schedule(wait, [self = shared_from_this()] { self->attempt(); });
      return;
    }
    done(std::move(*resp), errors);
  }
};

void fetch(const std::shared_ptr<kafka_context>& ctx, kafka::fetch_request req, kafka_done done) {
  auto job = std::make_shared<fetch_job>();
  job->ctx = ctx;
  auto wait = std::clamp<int32_t>(req.max_wait_ms, 0, 60000);
  job->deadline = std::chrono::steady_clock::now() + milliseconds{wait};
  job->req = std::move(req);
  job->done = std::move(done);
  job->attempt();
}

// --- ListOffsets -----------------------------------------------------------------

void list_offsets(const std::shared_ptr<kafka_context>& ctx, kafka::list_offsets_request req, kafka_done done) {
  auto resp = std::make_shared<kafka::list_offsets_response>();
  size_t parts = 0;
  for (const auto& t : req.topics) {
    resp->topics.push_back({t.name, {}});
    for (const auto& p : t.partitions) {
      kafka::list_offsets_partition_response r;
      r.partition_index = p.partition_index;
      resp->topics.back().partitions.push_back(r);
      ++parts;
    }
  }
  auto g = gather::make(parts, [resp, done] {
    int errors = partition_errors(*resp);
    done(std::move(*resp), errors);
  });
  auto topics = ctx->catalog->get();
  for (size_t ti = 0; ti < req.topics.size(); ++ti)
    for (size_t pi = 0; pi < req.topics[ti].partitions.size(); ++pi) {
      auto* slot = &resp->topics[ti].partitions[pi];
      auto ts = req.topics[ti].partitions[pi].timestamp;
      partition_actor actor;
      if (auto code = kafka_locate(*ctx, *topics, req.topics[ti].name, slot->partition_index, actor); code != 0) {
        slot->error_code = code;
        g->one();
        continue;
      }
      std::function<void(const caf::error&)> fail = [g, slot](const caf::error& e) {
        slot->error_code = kafka_code_of(e);
        g->one();
      };
      if (ts >= 0) {
        // The earliest offset whose record timestamp is >= ts, with that
        // timestamp; (-1, -1) when no record has one (or, read_committed,
        // when it is at or past the last stable offset), as Kafka answers
        // (UNKNOWN_OFFSET, UNKNOWN_TIMESTAMP, error none).
        ask_many<int64_t, int64_t>(
          *ctx->system, actor, ctx->timeout,
          [g, slot](int64_t& offset, int64_t& timestamp) {
            slot->offset = offset;
            slot->timestamp = timestamp;
            g->one();
          },
          std::move(fail), time_lookup_atom::value, ts, req.isolation_level == 1);
        continue;
      }
      if (req.isolation_level == 1 && ts != kafka::earliest_timestamp) {
        // read_committed: latest is the last stable offset.
        ask3::call(
          *ctx->system, actor, ctx->timeout,
          [g, slot](int64_t&, int64_t&, int64_t& lso) {
            slot->offset = lso;
            slot->timestamp = -1;
            g->one();
          },
          std::move(fail), lso_atom::value);
        continue;
      }
      ask3::call(
        *ctx->system, actor, ctx->timeout,
        [g, slot, ts](int64_t& lo, int64_t& hi, int64_t&) {
          // earliest (-2) = log start; latest (-1), and any other negative
          // value, = log end.
          slot->offset = ts == kafka::earliest_timestamp ? lo : hi;
          slot->timestamp = -1;
          g->one();
        },
        std::move(fail), bounds_atom::value);
    }
}

}  // namespace

void kafka_peer_call(const kafka_context& ctx, const std::string& broker, const std::string& method,
                     const std::string& target, std::string body, std::function<void(int, std::string)> done,
                     std::chrono::milliseconds timeout) {
  auto peer = ctx.peers->find(broker);
  if (!peer || !peer->client) {
    done(0, {});
    return;
  }
  peer_request req;
  req.method = method;
  req.target = target;
  req.body = std::move(body);
  if (!peer->token.empty())
    req.headers.emplace_back("X-Cluster-Token", peer->token);
  req.timeout = timeout.count() > 0 ? timeout : ctx.timeout;
  peer->client->request(std::move(req), [done](peer_result res) {
    done(res.ok() ? res.status : 0, std::move(res.body));
  });
}

std::optional<std::string> kafka_remote_owner(const kafka_context& ctx, const std::string& topic,
                                              int32_t partition) {
  if (!ctx.owners)
    return std::nullopt;
  return ctx.owners->owner_other_than(ctx.broker_id, cluster::topic_partition{topic, partition});
}

void handle_kafka_request(const std::shared_ptr<kafka_context>& ctx, kafka::request& req, kafka_done done) {
  auto version = req.header.api_version;
  if (handle_kafka_txn_request(ctx, req, done))
    return;
  if (std::holds_alternative<kafka::api_versions_request>(req.body)) {
    done(kafka_api_versions(*ctx), 0);
  } else if (auto* md = std::get_if<kafka::metadata_request>(&req.body)) {
    metadata(ctx, version, std::move(*md), std::move(done));
  } else if (auto* pr = std::get_if<kafka::produce_request>(&req.body)) {
    produce(ctx, version, std::move(*pr), std::move(done));
  } else if (auto* fr = std::get_if<kafka::fetch_request>(&req.body)) {
    fetch(ctx, std::move(*fr), std::move(done));
  } else if (auto* lo = std::get_if<kafka::list_offsets_request>(&req.body)) {
    list_offsets(ctx, std::move(*lo), std::move(done));
  } else if (auto* ip = std::get_if<kafka::init_producer_id_request>(&req.body)) {
    (void)ip;  // with a transactional id: handle_kafka_txn_request
    kafka::init_producer_id_response resp;
    resp.producer_id = ctx->producers->allocate();
    resp.producer_epoch = 0;
    done(resp, 0);
  } else if (!handle_kafka_topic_request(ctx, req, done) && !handle_kafka_admin_request(ctx, req, done)) {
    handle_kafka_group_request(ctx, req, std::move(done));
  }
}

// --- producer ids ---------------------------------------------------------------------

kafka_producer_ids::kafka_producer_ids(int32_t node_id) {
  std::random_device rd;
  std::mt19937_64 gen{(static_cast<uint64_t>(rd()) << 32) ^ rd()};
  const auto start = static_cast<int64_t>(gen() & ((uint64_t{1} << 51) - 1));  // room for 2^51 ids before 2^62
  next_ = (start << 10) + std::max(0, node_id) % 1024;
}

int64_t kafka_producer_ids::allocate() { return next_.fetch_add(1024); }

}  // namespace moonmq::transport
