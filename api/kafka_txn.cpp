#include "api/kafka_txn.hpp"

#include <algorithm>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/ask.hpp"
#include "actors/errors.hpp"
#include "actors/partition.hpp"
#include "kafka/txn_types.hpp"
#include "groups/types.hpp"
#include "api/kafka_groups.hpp"
#include "util/logging.hpp"

namespace moonmq::transport {
namespace {

using json = nlohmann::json;
namespace ec = kafka::error_code;
using cluster::txn_answer;
using cluster::txn_error;
using cluster::txn_request;

/// Bound on one transactional request to the coordinator: an EndTxn waits
/// for its markers (txn_settings::end_wait) behind a metadata-log write.
constexpr std::chrono::seconds txn_ask_timeout{30};

/// Operation not attempted (55): the other partitions of an
/// AddPartitionsToTxn one of whose partitions is unknown.
constexpr int16_t operation_not_attempted = 55;

/// Gives every partition of `topics` not answered yet (error 0) the code
/// `code`; returns how many partitions carry an error.
template <class Topic, class Partitions>
int fill_unanswered(std::vector<Topic>& topics, Partitions Topic::*partitions, int16_t code) {
  int errors = 0;
  for (auto& t : topics)
    for (auto& p : t.*partitions) {
      if (p.error_code == 0)
        p.error_code = code;
      errors += p.error_code != 0;
    }
  return errors;
}

/// Runs `req` on the coordinator and calls `answer` with the Kafka code
/// (and the answer, for its producer id and epoch).
void ask_coordinator(const std::shared_ptr<kafka_context>& ctx, txn_request req, kafka::api_key key, int16_t version,
                     std::function<void(int16_t, const txn_answer&)> answer) {
  if (!ctx->txns) {
    answer(ec::coordinator_not_available, txn_answer{});
    return;
  }
  ask<txn_answer>(
    *ctx->system, *ctx->txns, std::chrono::milliseconds(txn_ask_timeout),
    [answer, key, version](txn_answer& a) {
      if (a.error != txn_error::none && !a.message.empty())
        log::get("broker")->info("txn.refused code={} why=\"{}\"", cluster::to_string(a.error), a.message);
      answer(kafka_txn_code(a.error, key, version), a);
    },
    [answer](const caf::error&) { answer(ec::coordinator_not_available, txn_answer{}); }, txn_atom::value,
    std::move(req));
}

/// A transactional id the metadata log takes (raft::detail::valid_transactional_id):
/// anything else is answered INVALID_REQUEST (42), never retried.
bool valid_id(const std::string& id) {
  return !id.empty() && id.size() <= cluster::max_transactional_id_bytes;
}

/// NOT_COORDINATOR unless this broker coordinates `key` (a transactional id
/// or a group id: both are placed as groups are, docs/transactions.md).
bool coordinates(const kafka_context& ctx, const std::string& key) {
  return kafka_coordinator_of(ctx, key) == ctx.broker_id;
}

void init_producer_id(const std::shared_ptr<kafka_context>& ctx, int16_t version, kafka::init_producer_id_request& r,
                      kafka_done& done) {
  kafka::init_producer_id_response resp;
  if (!ctx->txns) {
    // A broker without the metadata log keeps no transaction state.
    resp.error_code = ec::coordinator_not_available;
    done(resp, 1);
    return;
  }
  if (!valid_id(*r.transactional_id)) {
    resp.error_code = ec::invalid_request;
    done(resp, 1);
    return;
  }
  if (!coordinates(*ctx, *r.transactional_id)) {
    resp.error_code = ec::not_coordinator;
    done(resp, 1);
    return;
  }
  txn_request req;
  req.what = txn_request::kind::init;
  req.transactional_id = *r.transactional_id;
  req.timeout_ms = r.transaction_timeout_ms;
  ask_coordinator(ctx, std::move(req), kafka::api_key::init_producer_id, version,
                  [done](int16_t code, const txn_answer& a) {
                    kafka::init_producer_id_response out;
                    out.error_code = code;
                    out.producer_id = code == 0 ? a.producer_id : -1;
                    out.producer_epoch = code == 0 ? a.producer_epoch : int16_t{-1};
                    done(out, code != 0);
                  });
}

void add_partitions(const std::shared_ptr<kafka_context>& ctx, int16_t version,
                    kafka::add_partitions_to_txn_request& r, kafka_done& done) {
  auto resp = std::make_shared<kafka::add_partitions_to_txn_response>();
  for (const auto& t : r.topics) {
    resp->results.push_back({t.name, {}});
    for (auto p : t.partitions)
      resp->results.back().results.push_back({p, 0});
  }
  auto fill = [resp](int16_t code) {
    return fill_unanswered(resp->results, &kafka::add_partitions_to_txn_topic_result::results, code);
  };
  if (!valid_id(r.transactional_id)) {
    done(*resp, fill(ec::invalid_request));
    return;
  }
  if (!coordinates(*ctx, r.transactional_id)) {
    done(*resp, fill(ec::not_coordinator));
    return;
  }
  // An unknown partition fails alone; the others are not attempted (Kafka).
  auto topics = ctx->owners ? ctx->owners->topics() : std::make_shared<const topic_image>();
  bool unknown = false;
  for (auto& t : resp->results) {
    auto known = topics->find(t.name);
    for (auto& p : t.results)
      if (known == topics->end() || p.partition_index < 0 || p.partition_index >= known->second.partitions) {
        p.error_code = ec::unknown_topic_or_partition;
        unknown = true;
      }
  }
  if (unknown) {
    done(*resp, fill(operation_not_attempted));
    return;
  }
  txn_request req;
  req.what = txn_request::kind::add_partitions;
  req.transactional_id = r.transactional_id;
  req.producer_id = r.producer_id;
  req.producer_epoch = r.producer_epoch;
  for (const auto& t : r.topics)
    for (auto p : t.partitions)
      req.partitions.push_back({t.name, p});
  ask_coordinator(ctx, std::move(req), kafka::api_key::add_partitions_to_txn, version,
                  [resp, fill, done](int16_t code, const txn_answer&) {
                    auto errors = fill(code);
                    done(*resp, errors);
                  });
}

/// AddOffsetsToTxn and EndTxn: one request, one code.
template <class Response>
void simple(const std::shared_ptr<kafka_context>& ctx, txn_request req, kafka::api_key key, int16_t version,
            kafka_done& done) {
  if (!valid_id(req.transactional_id) || !coordinates(*ctx, req.transactional_id)) {
    Response resp;
    resp.error_code = valid_id(req.transactional_id) ? ec::not_coordinator : ec::invalid_request;
    done(resp, 1);
    return;
  }
  ask_coordinator(ctx, std::move(req), key, version, [done](int16_t code, const txn_answer&) {
    Response resp;
    resp.error_code = code;
    done(resp, code != 0);
  });
}

void txn_offset_commit(const std::shared_ptr<kafka_context>& ctx, int16_t version,
                       kafka::txn_offset_commit_request& r, kafka_done& done) {
  auto resp = std::make_shared<kafka::txn_offset_commit_response>();
  for (const auto& t : r.topics) {
    resp->topics.push_back({t.name, {}});
    for (const auto& p : t.partitions)
      resp->topics.back().partitions.push_back({p.partition_index, 0});
  }
  auto fill = [resp](int16_t code) {
    return fill_unanswered(resp->topics, &kafka::txn_offset_commit_topic_response::partitions, code);
  };
  if (!valid_id(r.transactional_id) || r.group_id.empty()) {
    done(*resp, fill(ec::invalid_request));
    return;
  }
  // On the group's coordinator, as Kafka's TxnOffsetCommit.
  if (!coordinates(*ctx, r.group_id)) {
    done(*resp, fill(ec::not_coordinator));
    return;
  }
  // Checked here, as OffsetCommit checks them: held offsets are stored at
  // commit, where a refusal could never be answered any more.
  auto topics = ctx->owners ? ctx->owners->topics() : std::make_shared<const topic_image>();
  txn_request req;
  req.what = txn_request::kind::offset_commit;
  req.transactional_id = r.transactional_id;
  req.producer_id = r.producer_id;
  req.producer_epoch = r.producer_epoch;
  req.group = r.group_id;
  size_t ti = 0;
  for (const auto& t : r.topics) {
    size_t pi = 0;
    for (const auto& p : t.partitions) {
      auto& slot = resp->topics[ti].partitions[pi++];
      auto known = topics->find(t.name);
      if (known == topics->end() || p.partition_index < 0 || p.partition_index >= known->second.partitions)
        slot.error_code = ec::unknown_topic_or_partition;
      else if (p.committed_offset < 0)
        slot.error_code = ec::invalid_commit_offset_size;
      else if (p.committed_metadata && p.committed_metadata->size() > groups::max_offset_metadata_bytes)
        slot.error_code = ec::offset_metadata_too_large;
      else
        req.offsets.push_back({r.group_id, t.name, p.partition_index, p.committed_offset,
                               p.committed_metadata.value_or("")});
    }
    ++ti;
  }
  ask_coordinator(ctx, std::move(req), kafka::api_key::txn_offset_commit, version,
                  [fill, resp, done](int16_t code, const txn_answer&) {
                    auto errors = fill(code);
                    done(*resp, errors);
                  });
}

/// The coordinator's effects over `w`'s listener context.
txn_effects effects_of(std::weak_ptr<kafka_context> w) {
  txn_effects fx;
  fx.write_marker = [w](const cluster::txn_record& rec, const cluster::txn_partition& p,
                        std::function<void(std::string)> done) {
    auto ctx = w.lock();
    if (!ctx) {
      done("the broker is stopping");
      return;
    }
    bool commit = rec.state == cluster::txn_state::prepare_commit;
    auto topics = ctx->owners->topics();
    auto known = topics->find(p.topic);
    if (known == topics->end() || p.partition >= known->second.partitions) {
      done({});  // the topic was deleted: no record of it is left to mark
      return;
    }
    auto route = ctx->owners->route(ctx->broker_id, {p.topic, p.partition});
    const auto where = p.topic + "/" + std::to_string(p.partition);
    if (route.where == partition_route::kind::unowned) {
      done("no broker owns " + where);
      return;
    }
    if (route.where == partition_route::kind::remote) {
      json body{{"topic", p.topic},           {"partition", p.partition}, {"producer_id", rec.producer_id},
                {"producer_epoch", rec.producer_epoch}, {"commit", commit}, {"coordinator_epoch", 0}};
      kafka_peer_call(*ctx, route.owner, "POST", "/cluster/txn/markers", body.dump(),
                      [done, where, owner = route.owner](int status, std::string answer) {
                        done(status == 200 ? std::string{}
                                           : "the marker of " + where + " at " + owner + ": " + std::to_string(status)
                                               + " " + answer);
                      });
      return;
    }
    auto local = ctx->catalog->get();
    partition_actor actor;
    if (kafka_locate(*ctx, *local, p.topic, p.partition, actor) != 0) {
      done(where + " is not held here yet");
      return;
    }
    ask<int64_t>(
      *ctx->system, actor, ctx->timeout, [done](int64_t&) { done({}); },
      [done, where](const caf::error& e) { done("the marker of " + where + ": " + message_of(e)); },
      marker_atom::value, rec.producer_id, rec.producer_epoch, commit, int32_t{0});
  };
  fx.commit_offsets = [w](const std::string& group, const std::vector<cluster::txn_offset>& offsets,
                          std::function<void(std::string)> done) {
    auto ctx = w.lock();
    if (!ctx) {
      done("the broker is stopping");
      return;
    }
    kafka::offset_commit_request req;
    req.group_id = group;
    req.generation_id = -1;
    for (const auto& o : offsets) {
      auto t = std::find_if(req.topics.begin(), req.topics.end(), [&](const auto& x) { return x.name == o.topic; });
      if (t == req.topics.end()) {
        req.topics.push_back({});
        req.topics.back().name = o.topic;
        t = std::prev(req.topics.end());
      }
      kafka::offset_commit_partition part;
      part.partition_index = o.partition;
      part.committed_offset = o.offset;
      part.committed_metadata = o.metadata;
      t->partitions.push_back(std::move(part));
    }
    commit_at_owners(ctx, std::move(req), 0, [done, group](std::optional<kafka::response_body> body, int) {
      // A partition whose topic was deleted since needs no offset (3); any
      // other refusal is retried by the next round.
      int refused = 0;
      if (const auto* r = body ? std::get_if<kafka::offset_commit_response>(&*body) : nullptr)
        for (const auto& t : r->topics)
          for (const auto& p : t.partitions)
            refused += p.error_code != ec::none && p.error_code != ec::unknown_topic_or_partition;
      else
        refused = 1;
      done(refused == 0 ? std::string{}
                        : "offsets of group " + group + ": " + std::to_string(refused) + " partitions refused");
    });
  };
  fx.coordinates = [w](const std::string& id) {
    auto ctx = w.lock();
    return ctx && coordinates(*ctx, id);
  };
  fx.new_producer_id = [w]() -> int64_t {
    auto ctx = w.lock();
    return ctx ? ctx->producers->allocate() : -1;
  };
  return fx;
}

}  // namespace

int16_t kafka_txn_code(txn_error e, kafka::api_key key, int16_t version) {
  switch (e) {
    case txn_error::none: return ec::none;
    case txn_error::invalid_producer_id_mapping: return ec::invalid_producer_id_mapping;
    case txn_error::invalid_producer_epoch: return kafka::producer_fenced_code(key, version);
    case txn_error::concurrent_transactions: return ec::concurrent_transactions;
    case txn_error::invalid_txn_state: return ec::invalid_txn_state;
    case txn_error::invalid_transaction_timeout: return ec::invalid_transaction_timeout;
    case txn_error::coordinator_not_available: return ec::coordinator_not_available;
    case txn_error::not_coordinator: return ec::not_coordinator;
  }
  return ec::unknown_server_error;
}

kafka::api_versions_response kafka_api_versions(const kafka_context& ctx) {
  auto resp = kafka::make_api_versions_response();
  if (!ctx.txns) {
    auto& keys = resp.api_keys;
    keys.erase(std::remove_if(keys.begin(), keys.end(),
                              [](const kafka::api_version_entry& e) { return kafka::is_transaction_api(e.api); }),
               keys.end());
  }
  return resp;
}

txn_actor spawn_kafka_txn_coordinator(const std::shared_ptr<kafka_context>& ctx, raft_actor raft,
                                      registry_actor reg, std::chrono::milliseconds id_expiration) {
  txn_settings s;
  s.id_expiration = id_expiration;
  s.broker_id = ctx->broker_id;
  s.owners = ctx->owners;
  s.raft = std::move(raft);
  auto a = spawn_txn_coordinator(*ctx->system, std::move(s), effects_of(ctx), std::move(reg));
  ctx->txns = a;
  return a;
}

bool handle_kafka_txn_request(const std::shared_ptr<kafka_context>& ctx, kafka::request& req, kafka_done& done) {
  const auto version = req.header.api_version;
  if (auto* ip = std::get_if<kafka::init_producer_id_request>(&req.body); ip && ip->transactional_id) {
    init_producer_id(ctx, version, *ip, done);
  } else if (auto* ap = std::get_if<kafka::add_partitions_to_txn_request>(&req.body)) {
    add_partitions(ctx, version, *ap, done);
  } else if (auto* ao = std::get_if<kafka::add_offsets_to_txn_request>(&req.body)) {
    txn_request r;
    r.what = txn_request::kind::add_offsets;
    r.transactional_id = ao->transactional_id;
    r.producer_id = ao->producer_id;
    r.producer_epoch = ao->producer_epoch;
    r.group = ao->group_id;
    simple<kafka::add_offsets_to_txn_response>(ctx, std::move(r), kafka::api_key::add_offsets_to_txn, version, done);
  } else if (auto* et = std::get_if<kafka::end_txn_request>(&req.body)) {
    txn_request r;
    r.what = txn_request::kind::end;
    r.transactional_id = et->transactional_id;
    r.producer_id = et->producer_id;
    r.producer_epoch = et->producer_epoch;
    r.commit = et->committed;
    simple<kafka::end_txn_response>(ctx, std::move(r), kafka::api_key::end_txn, version, done);
  } else if (auto* tc = std::get_if<kafka::txn_offset_commit_request>(&req.body)) {
    txn_offset_commit(ctx, version, *tc, done);
  } else {
    return false;
  }
  return true;
}

}  // namespace moonmq::transport
