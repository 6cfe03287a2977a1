// Kafka CreateTopics (19) and DeleteTopics (20) for the Kafka listener
// (docs/kafka.md "Topics"): with the metadata log through the cluster
// state actor, so that every broker creates or removes its copy; without
// one, on this broker alone.

#include <map>
#include <set>

#include <caf/all.hpp>

#include "actors/ask.hpp"
#include "actors/errors.hpp"
#include "dataplane/topic_config.hpp"
#include "dataplane/topic_name.hpp"
#include "api/kafka_admin.hpp"
#include "util/logging.hpp"

namespace moonmq::transport {

void kafka_create_topic(const kafka_context& ctx, const std::string& name, int32_t partitions, std::string config,
                        std::function<void(bool&)> ok, std::function<void(const caf::error&)> fail,
                        std::vector<std::string> owners) {
  if (ctx.metadata && !owners.empty())
    ask<bool>(*ctx.system, *ctx.metadata, ctx.timeout, std::move(ok), std::move(fail), create_atom::value, name,
              partitions, std::move(config), std::move(owners));
  else if (ctx.metadata)
    ask<bool>(*ctx.system, *ctx.metadata, ctx.timeout, std::move(ok), std::move(fail), create_atom::value, name,
              partitions, std::move(config));
  else
    ask<bool>(*ctx.system, ctx.broker, ctx.timeout, std::move(ok), std::move(fail), create_atom::value, name,
              partitions, std::move(config));
}


namespace {

namespace ec = kafka::error_code;
using gather = kafka_gather;

/// The owner of each partition a CreateTopics assignment names into
/// `owners`, or why the assignment is refused (Kafka's
/// INVALID_REPLICA_ASSIGNMENT). Partition indexes must be 0..n-1, each once;
/// every node id of a partition's list must be a broker of the cluster,
/// each once. moonmq keeps one copy, so the owner is the first broker of
/// the list that is neither fenced, draining nor removed (Kafka takes the
/// first live replica as leader); a list with none is refused. Without the
/// metadata log only this broker's node id is a broker, and `owners` stays
/// empty (every partition is local).
std::string assigned_owners(const kafka_context& ctx, const kafka::creatable_topic& t,
                            std::vector<std::string>& owners) {
  std::vector<std::string> named(t.assignments.size());
  std::vector<bool> seen(t.assignments.size(), false);
  auto standing = ctx.owners ? ctx.owners->standing() : std::make_shared<const broker_standing>();
  for (const auto& a : t.assignments) {
    auto p = a.partition_index;
    if (p < 0 || static_cast<size_t>(p) >= t.assignments.size() || seen[static_cast<size_t>(p)])
      return "partition indexes must run 0.." + std::to_string(t.assignments.size() - 1) + ", each once; got "
             + std::to_string(p);
    seen[static_cast<size_t>(p)] = true;
    if (a.broker_ids.empty())
      return "partition " + std::to_string(p) + " names no broker";
    std::set<int32_t> listed;
    for (auto node : a.broker_ids) {
      if (!listed.insert(node).second)
        return "partition " + std::to_string(p) + " names node id " + std::to_string(node) + " twice";
      std::optional<std::string> broker;
      if (ctx.owners)
        broker = ctx.owners->broker_of_kafka_node_id(node);
      else if (node == kafka_node_id(ctx, ctx.broker_id))
        broker = ctx.broker_id;
      if (!broker)
        return "partition " + std::to_string(p) + ": no broker has node id " + std::to_string(node);
      if (named[static_cast<size_t>(p)].empty() && !standing->fenced.count(*broker)
          && !standing->draining.count(*broker) && !standing->removed.count(*broker))
        named[static_cast<size_t>(p)] = *broker;
    }
    if (named[static_cast<size_t>(p)].empty())
      return "partition " + std::to_string(p) + ": every broker of its list is fenced, draining or removed";
  }
  if (ctx.metadata)
    owners = std::move(named);
  return {};
}

void create_topics(const std::shared_ptr<kafka_context>& ctx, kafka::create_topics_request req, kafka_done done) {
  auto resp = std::make_shared<kafka::create_topics_response>();
  resp->topics.resize(req.topics.size());
  std::vector<size_t> todo;
  auto topics = ctx->catalog->get();
  // num.partitions read once: every entry of the request is checked and
  // created with the same default.
  auto fallback = kafka_num_partitions(*ctx);
  std::vector<std::string> configs(req.topics.size());
  std::vector<std::vector<std::string>> owners(req.topics.size());
  for (size_t i = 0; i < req.topics.size(); ++i) {
    const auto& t = req.topics[i];
    auto& r = resp->topics[i];
    r.name = t.name;
    auto n = !t.assignments.empty() ? static_cast<int32_t>(t.assignments.size())
             : t.num_partitions == -1 ? fallback
                                      : t.num_partitions;
    // With assignments the count is theirs; a client that also sends it
    // (rather than -1) must agree. The replication factor is ignored, as
    // everywhere (one copy per partition).
    bool counted = t.num_partitions == -1 || t.num_partitions == n;
    std::string unassignable;
    if (!t.assignments.empty() && counted && n <= dataplane::max_partitions)
      unassignable = assigned_owners(*ctx, t, owners[i]);
    // Kafka clients create their internal topics with configs moonmq does
    // not implement (Connect and Streams: cleanup.policy=compact,
    // min.insync.replicas, ...): those are ignored with a warning, as
    // before configs were kept (keeping every record, the default, is a
    // superset of compaction); known keys with bad values are refused.
    dataplane::topic_config_changes changes;
    for (const auto& c : t.configs) {
      bool kept = dataplane::is_topic_config_key(c.name) && (c.name != "cleanup.policy" || c.value == "delete");
      if (kept)
        changes.push_back({c.name, c.value});
      else
        log::get("transport")->warn("kafka.topic_config_ignored topic={} config={} value=\"{}\"", t.name, c.name,
                                    c.value.value_or("null"));
    }
    if (auto why = dataplane::check_topic_name(t.name); !why.empty()) {
      r.error_code = ec::invalid_topic_exception;
      r.error_message = why;
    } else if (topics->count(t.name)) {
      r.error_code = ec::topic_already_exists;
      r.error_message = "topic " + t.name + " already exists";
    } else if (!t.assignments.empty() && !counted) {
      r.error_code = ec::invalid_request;
      r.error_message = "num_partitions " + std::to_string(t.num_partitions) + " disagrees with "
                        + std::to_string(t.assignments.size()) + " partition assignments";
    } else if (!unassignable.empty()) {
      r.error_code = ec::invalid_replica_assignment;
      r.error_message = unassignable;
    } else if (n < 1 || n > dataplane::max_partitions) {
      r.error_code = ec::invalid_partitions;
      r.error_message = "num_partitions must be between 1 and " + std::to_string(dataplane::max_partitions);
    } else if (auto bad = dataplane::change_topic_config("", changes, true, configs[i]); !bad.empty()) {
      r.error_code = ec::invalid_config;  // Kafka: INVALID_CONFIG naming the key
      r.error_message = bad;
    } else if (!req.validate_only) {
      todo.push_back(i);
    }
  }
  auto g = gather::make(todo.size(), [resp, done] {
    int errors = 0;
    for (const auto& t : resp->topics)
      errors += t.error_code != 0;
    done(std::move(*resp), errors);
  });
  for (auto i : todo) {
    auto n = !req.topics[i].assignments.empty() ? static_cast<int32_t>(req.topics[i].assignments.size())
             : req.topics[i].num_partitions == -1 ? fallback
                                                  : req.topics[i].num_partitions;
    bool assigned = !owners[i].empty();
    kafka_create_topic(
      *ctx, req.topics[i].name, n, configs[i],
      [g, resp, i](bool& created) {
        if (!created) {
          resp->topics[i].error_code = ec::topic_already_exists;
          resp->topics[i].error_message = "topic already exists";
        }
        g->one();
      },
      [g, resp, i, assigned](const caf::error& e) {
        // Existing with another count: 36; the metadata log unavailable
        // (no leader, a timeout): 7, retriable; an assignment the cluster
        // cannot take (a broker removed, one that may not read it): 39;
        // anything else: 42.
        auto msg = message_of(e);
        resp->topics[i].error_code = msg.find("already exists") != std::string::npos ? ec::topic_already_exists
                                     : http_status_of(e) >= 500                      ? ec::request_timed_out
                                     : assigned                                      ? ec::invalid_replica_assignment
                                                                                     : ec::invalid_request;
        resp->topics[i].error_message = msg;
        g->one();
      },
      std::move(owners[i]));
  }
}

/// DeleteTopics: each name through the metadata log (every broker then
/// removes its copy), or on this broker alone without one. Errors per topic:
/// 3 unknown, 17 a bad name, 60 a move of one of its partitions under way,
/// 7 the log unavailable (retriable), 42 a name given twice or anything else.
void delete_topics(const std::shared_ptr<kafka_context>& ctx, kafka::delete_topics_request req, kafka_done done) {
  auto resp = std::make_shared<kafka::delete_topics_response>();
  resp->responses.resize(req.topic_names.size());
  std::vector<size_t> todo;
  std::map<std::string, int> seen;
  for (const auto& name : req.topic_names)
    ++seen[name];
  for (size_t i = 0; i < req.topic_names.size(); ++i) {
    resp->responses[i].name = req.topic_names[i];
    if (seen[req.topic_names[i]] > 1)
      resp->responses[i].error_code = ec::invalid_request;  // Kafka: a name given twice is refused for each
    else if (!dataplane::check_topic_name(req.topic_names[i]).empty())
      resp->responses[i].error_code = ec::invalid_topic_exception;
    else
      todo.push_back(i);
  }
  auto g = gather::make(todo.size(), [resp, done] {
    int errors = 0;
    for (const auto& t : resp->responses)
      errors += t.error_code != 0;
    done(std::move(*resp), errors);
  });
  for (auto i : todo) {
    auto ok = [g, resp, i](bool& existed) {
      if (!existed)
        resp->responses[i].error_code = ec::unknown_topic_or_partition;
      g->one();
    };
    auto fail = [g, resp, i, name = req.topic_names[i]](const caf::error& e) {
      auto code = error_code_of(e);
      resp->responses[i].error_code = code == "unknown_topic"  ? ec::unknown_topic_or_partition
                                      : code == "topic_moving" ? ec::reassignment_in_progress
                                      : http_status_of(e) >= 500 ? ec::request_timed_out
                                                                 : ec::invalid_request;
      log::get("transport")->warn("kafka.delete_topic_failed topic={} error=\"{}\"", name, message_of(e));
      g->one();
    };
    if (ctx->metadata)
      ask<bool>(*ctx->system, *ctx->metadata, ctx->timeout, ok, fail, delete_atom::value, req.topic_names[i]);
    else
      ask<bool>(*ctx->system, ctx->broker, ctx->timeout, ok, fail, delete_atom::value, req.topic_names[i],
                int64_t{-1});
  }
}

}  // namespace

bool handle_kafka_topic_request(const std::shared_ptr<kafka_context>& ctx, kafka::request& req, kafka_done& done) {
  if (auto* ct = std::get_if<kafka::create_topics_request>(&req.body))
    create_topics(ctx, std::move(*ct), std::move(done));
  else if (auto* dt = std::get_if<kafka::delete_topics_request>(&req.body))
    delete_topics(ctx, std::move(*dt), std::move(done));
  else
    return false;
  return true;
}

}  // namespace moonmq::transport
