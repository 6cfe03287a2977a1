#include "api/kafka_admin.hpp"

#include <map>
#include <set>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/ask.hpp"
#include "actors/errors.hpp"
#include "config/dynamic.hpp"
#include "dataplane/topic_config.hpp"
#include "dataplane/topic_name.hpp"
#include "util/logging.hpp"

namespace moonmq::transport {
namespace {

namespace ec = kafka::error_code;
using gather = kafka_gather;

/// Names given more than once in one request: Kafka answers INVALID_REQUEST
/// for each of their entries.
template <class Items, class Name>
std::map<std::string, int> name_counts(const Items& items, Name name) {
  std::map<std::string, int> seen;
  for (const auto& i : items)
    ++seen[name(i)];
  return seen;
}

/// A topic's config as the metadata log holds it (keys set on the topic),
/// or a standalone broker's non-default keys; nullopt for an unknown topic.
std::optional<std::string> topic_config_of(const kafka_context& ctx, const std::string& topic) {
  if (ctx.owners && ctx.metadata) {
    auto topics = ctx.owners->topics();
    auto it = topics->find(topic);
    if (it == topics->end())
      return std::nullopt;
    return it->second.config;
  }
  auto topics = ctx.catalog->get();
  auto it = topics->find(topic);
  if (it == topics->end())
    return std::nullopt;
  return dataplane::topic_config_overrides(it->second.config);
}

/// The partition count of `topic` (the log's with one), or -1 when unknown.
int32_t partition_count(const kafka_context& ctx, const std::string& topic) {
  if (ctx.owners && ctx.metadata) {
    auto topics = ctx.owners->topics();
    auto it = topics->find(topic);
    return it == topics->end() ? -1 : it->second.partitions;
  }
  auto topics = ctx.catalog->get();
  auto it = topics->find(topic);
  return it == topics->end() ? -1 : static_cast<int32_t>(it->second.partitions.size());
}

/// The Kafka code of a failed topic change: unknown topic 3, a refused
/// value `invalid` (37 for counts, 40 for configs), the metadata log
/// unavailable 7 (retriable), anything else 42.
int16_t change_code(const caf::error& e, int16_t invalid) {
  auto code = error_code_of(e);
  if (code == "unknown_topic")
    return ec::unknown_topic_or_partition;
  if (code == "invalid_request")
    return invalid;
  if (http_status_of(e) >= 500)
    return ec::request_timed_out;
  return ec::invalid_request;
}

// --- CreatePartitions ---------------------------------------------------------

/// Grows each topic through the metadata log (or this broker). Per topic: 3
/// unknown, 37 a count at or below the current one or above the limit, 39
/// a manual assignment (new partitions are owned by the receiving broker;
/// move them afterwards), 42 a name given twice, 7 the log unavailable.
void create_partitions(const std::shared_ptr<kafka_context>& ctx, kafka::create_partitions_request req,
                       kafka_done done) {
  auto resp = std::make_shared<kafka::create_partitions_response>();
  resp->results.resize(req.topics.size());
  auto seen = name_counts(req.topics, [](const auto& t) { return t.name; });
  std::vector<size_t> todo;
  for (size_t i = 0; i < req.topics.size(); ++i) {
    const auto& t = req.topics[i];
    auto& r = resp->results[i];
    r.name = t.name;
    auto have = partition_count(*ctx, t.name);
    if (seen[t.name] > 1) {
      r.error_code = ec::invalid_request;
      r.error_message = "topic " + t.name + " is named more than once";
    } else if (have < 0) {
      r.error_code = ec::unknown_topic_or_partition;
      r.error_message = "unknown topic " + t.name;
    } else if (t.count <= have) {
      r.error_code = ec::invalid_partitions;
      r.error_message = "topic " + t.name + " has " + std::to_string(have) + " partitions; the new count "
                        + std::to_string(t.count) + " must be larger";
    } else if (t.count > dataplane::max_partitions) {
      r.error_code = ec::invalid_partitions;
      r.error_message = "the partition count must be at most " + std::to_string(dataplane::max_partitions);
    } else if (t.assignments && !t.assignments->empty()) {
      r.error_code = ec::invalid_replica_assignment;
      r.error_message = "manual assignment is not supported: new partitions start as TopicPlacement says; "
                        "move them afterwards (moonmqctl reassign)";
    } else if (!req.validate_only) {
      todo.push_back(i);
    }
  }
  auto g = gather::make(todo.size(), [resp, done] {
    int errors = 0;
    for (const auto& r : resp->results)
      errors += r.error_code != 0;
    done(std::move(*resp), errors);
  });
  for (auto i : todo) {
    auto ok = [g](int32_t) { g->one(); };
    auto fail = [g, resp, i](const caf::error& e) {
      auto& r = resp->results[i];
      r.error_code = change_code(e, ec::invalid_partitions);
      r.error_message = message_of(e);
      log::get("transport")->warn("kafka.create_partitions_failed topic={} error=\"{}\"", r.name, *r.error_message);
      g->one();
    };
    const auto& t = req.topics[i];
    if (ctx->metadata)
      ask<int32_t>(*ctx->system, *ctx->metadata, ctx->timeout, ok, fail, grow_atom::value, t.name, t.count);
    else
      ask<int32_t>(*ctx->system, ctx->broker, ctx->timeout, ok, fail, grow_atom::value, t.name, t.count);
  }
}

// --- DescribeConfigs ------------------------------------------------------------

/// Adds a row unless the request names keys and not this one (null or an
/// empty list = every key, as Kafka and kafkajs read it). `chain`: where
/// the value could come from, in Kafka's order of precedence, the first
/// being where it does (its value and source are the row's); the whole
/// chain is the row's synonyms when asked for (v1+, include_synonyms).
void add_config(kafka::describe_configs_result& out, const kafka::describe_configs_resource& res, int16_t version,
                bool synonyms, std::string name, bool read_only, std::vector<kafka::describe_configs_synonym> chain) {
  const auto& keys = res.configuration_keys;
  if (keys && !keys->empty() && std::find(keys->begin(), keys->end(), name) == keys->end())
    return;
  kafka::describe_configs_entry e;
  e.name = std::move(name);
  e.value = chain.front().value;
  e.read_only = read_only;
  auto source = chain.front().source;
  e.is_default = source == kafka::config_source::default_config;
  if (version >= 1) {
    e.config_source = source;
    if (synonyms)
      e.synonyms = std::move(chain);
  }
  out.configs.push_back(std::move(e));
}

/// The cluster's topic defaults (none on a standalone broker).
dataplane::topic_defaults cluster_topic_defaults(const kafka_context& ctx) {
  return ctx.owners && ctx.metadata ? ctx.owners->topic_defaults() : dataplane::topic_defaults{};
}

/// The built-in value of a topic key, as text.
std::string built_in_value(const std::string& topic_key) {
  for (const auto& r : dataplane::describe_topic_config(""))
    if (r.name == topic_key)
      return r.value;
  return {};
}

void describe_topic(const kafka_context& ctx, const kafka::describe_configs_resource& res, int16_t version,
                    bool synonyms, kafka::describe_configs_result& out) {
  namespace src = kafka::config_source;
  auto config = topic_config_of(ctx, res.resource_name);
  if (!config) {
    out.error_code = ec::unknown_topic_or_partition;
    out.error_message = "unknown topic " + res.resource_name;
    return;
  }
  auto defaults = cluster_topic_defaults(ctx);
  auto cluster_rows = dataplane::describe_topic_config("", defaults);
  for (auto& row : dataplane::describe_topic_config(*config, defaults)) {
    // Kafka's chain: the topic's own value, the dynamic cluster-wide
    // default (log.*), the built-in default.
    const char* broker_name = nullptr;
    for (const auto& k : dataplane::topic_default_keys())
      if (row.name == k.topic)
        broker_name = k.broker;
    std::vector<kafka::describe_configs_synonym> chain;
    if (!row.is_default)
      chain.push_back({row.name, row.value, src::dynamic_topic});
    if (broker_name && defaults.cluster.count(row.name) != 0)
      for (const auto& c : cluster_rows)
        if (c.name == row.name)
          chain.push_back({broker_name, c.value, src::dynamic_default_broker});
    chain.push_back({broker_name ? broker_name : row.name, built_in_value(row.name), src::default_config});
    add_config(out, res, version, synonyms, row.name, row.read_only, std::move(chain));
  }
}

/// A broker resource: "" (the cluster default) or a broker's Kafka node id.
/// num.partitions and the topic defaults log.segment.bytes,
/// log.retention.bytes and log.retention.ms are the cluster's dynamic
/// defaults (docs/metadata.md "Dynamic settings");
/// auto.create.topics.enable is always on.
void describe_broker(const kafka_context& ctx, const kafka::describe_configs_resource& res, int16_t version,
                     bool synonyms, kafka::describe_configs_result& out) {
  namespace src = kafka::config_source;
  bool dynamic = false;
  if (ctx.owners) {
    auto settings = nlohmann::json::parse(*ctx.owners->balancer(), nullptr, false);
    dynamic = settings.is_object() && settings.contains("NumPartitions") && !settings["NumPartitions"].is_null();
  }
  add_config(out, res, version, synonyms, "num.partitions", false,
             {{"num.partitions", std::to_string(kafka_num_partitions(ctx)),
               dynamic ? src::dynamic_default_broker : src::static_broker}});
  add_config(out, res, version, synonyms, "auto.create.topics.enable", true,
             {{"auto.create.topics.enable", std::string("true"), src::default_config}});
  auto defaults = cluster_topic_defaults(ctx);
  auto rows = dataplane::describe_topic_config("", defaults);
  for (const auto& k : dataplane::topic_default_keys())
    for (const auto& r : rows)
      if (r.name == k.topic) {
        std::vector<kafka::describe_configs_synonym> chain;
        if (r.cluster_default)
          chain.push_back({k.broker, r.value, src::dynamic_default_broker});
        chain.push_back({k.broker, built_in_value(k.topic), src::default_config});
        add_config(out, res, version, synonyms, k.broker, false, std::move(chain));
      }
}

/// A broker resource name: "" or a decimal node id.
bool broker_name_ok(const std::string& name) {
  return name.empty()
         || (name.size() <= 10 && name.find_first_not_of("0123456789") == std::string::npos);
}

void describe_configs(const std::shared_ptr<kafka_context>& ctx, int16_t version,
                      kafka::describe_configs_request req, kafka_done done) {
  kafka::describe_configs_response resp;
  int errors = 0;
  for (const auto& res : req.resources) {
    kafka::describe_configs_result out;
    out.resource_type = res.resource_type;
    out.resource_name = res.resource_name;
    if (res.resource_type == kafka::config_resource::topic) {
      describe_topic(*ctx, res, version, req.include_synonyms, out);
    } else if (res.resource_type == kafka::config_resource::broker && broker_name_ok(res.resource_name)) {
      describe_broker(*ctx, res, version, req.include_synonyms, out);
    } else {
      out.error_code = ec::invalid_request;
      out.error_message = res.resource_type == kafka::config_resource::broker
                            ? "a broker resource is named by its node id, or \"\" for the cluster default"
                            : "resource type " + std::to_string(res.resource_type)
                                + " is not supported (topics: 2, brokers: 4)";
    }
    errors += out.error_code != 0;
    resp.results.push_back(std::move(out));
  }
  done(std::move(resp), errors);
}

// --- AlterConfigs and IncrementalAlterConfigs -------------------------------------

/// One resource of AlterConfigs or IncrementalAlterConfigs as a list of
/// changes (value nullopt = back to the default), or why the request's
/// form refuses it before any config rule is applied.
struct config_alteration {
  int8_t resource_type = 0;
  std::string resource_name;
  dataplane::topic_config_changes changes;
  int16_t refused = 0;
  std::string why;
};

/// The cluster defaults num.partitions, log.segment.bytes,
/// log.retention.bytes and log.retention.ms as a dynamic settings patch
/// (config/dynamic.hpp: NumPartitions, LogSegmentBytes, ...), or why not.
/// `replace` (AlterConfigs): a key the request leaves out is reset (back
/// to the configured or built-in value); otherwise it stays as it is.
std::string broker_patch(const config_alteration& res, bool replace, std::string& patch) {
  if (!res.resource_name.empty())
    return "broker configs are cluster-wide in moonmq: alter the cluster default (resource name \"\")";
  std::vector<std::pair<std::string, std::string>> names{{"num.partitions", "NumPartitions"}};  // Kafka's, setting
  for (const auto& k : dataplane::topic_default_keys())
    names.emplace_back(k.broker, k.setting);
  nlohmann::json p = nlohmann::json::object();
  if (replace)
    for (const auto& [kafka_name, setting] : names)
      p[setting] = nullptr;
  for (const auto& c : res.changes) {
    auto it = std::find_if(names.begin(), names.end(), [&](const auto& n) { return n.first == c.name; });
    if (it == names.end())
      return "config." + c.name
             + ": not a dynamic broker config (known: num.partitions, log.segment.bytes, log.retention.bytes, "
               "log.retention.ms)";
    if (!c.value) {
      p[it->second] = nullptr;
      continue;
    }
    size_t used = 0;
    int64_t n = 0;
    try {
      n = std::stoll(*c.value, &used);
    } catch (...) {
      used = 0;
    }
    if (used == 0 || used != c.value->size())
      return "config." + c.name + ": expected an integer, got '" + *c.value + "'";
    if (it->second == "NumPartitions" && (n < 1 || n > config::max_num_partitions))
      return "config.num.partitions: expected an integer in [1, " + std::to_string(config::max_num_partitions)
             + "], got '" + *c.value + "'";
    for (const auto& k : dataplane::topic_default_keys())
      if (it->second == k.setting)
        if (auto why = dataplane::check_topic_default(k, n, "config." + c.name); !why.empty())
          return why;
    p[it->second] = n;
  }
  patch = p.dump();
  return {};
}

/// Applies each resource's changes: `replace` (AlterConfigs) makes them a
/// topic's whole config (keys left out return to their defaults); otherwise
/// (IncrementalAlterConfigs, PATCH /v1/topics/{t}/config) they are merged
/// as a patch through the metadata log, and untouched keys keep their
/// values. Broker resources: the cluster defaults (broker_patch). Per
/// resource: the alteration's own refusal, 3 unknown topic, 40 a bad or
/// unknown key (named in the message), 42 a resource named twice or of
/// another type, 7 the metadata log unavailable. `done` gets one answer
/// per resource, in order, and the count of errors.
void change_configs(const std::shared_ptr<kafka_context>& ctx, std::vector<config_alteration> req, bool replace,
                    bool validate_only,
                    std::function<void(std::vector<kafka::alter_configs_resource_response>, int)> done) {
  auto resp = std::make_shared<std::vector<kafka::alter_configs_resource_response>>(req.size());
  auto seen = name_counts(req, [](const auto& r) { return std::to_string(r.resource_type) + "/" + r.resource_name; });
  std::vector<std::pair<size_t, std::string>> brokers;  // index, patch
  std::vector<size_t> topics;
  for (size_t i = 0; i < req.size(); ++i) {
    auto& res = req[i];
    auto& r = (*resp)[i];
    r.resource_type = res.resource_type;
    r.resource_name = res.resource_name;
    auto refuse = [&](int16_t code, std::string why) {
      r.error_code = code;
      r.error_message = std::move(why);
    };
    if (seen[std::to_string(res.resource_type) + "/" + res.resource_name] > 1) {
      refuse(ec::invalid_request, "resource " + res.resource_name + " is named more than once");
    } else if (res.refused != 0) {
      refuse(res.refused, res.why);
    } else if (res.resource_type == kafka::config_resource::topic) {
      auto current = topic_config_of(*ctx, res.resource_name);
      std::string next;
      if (!current)
        refuse(ec::unknown_topic_or_partition, "unknown topic " + res.resource_name);
      else if (auto why = dataplane::change_topic_config(*current, res.changes, replace, next); !why.empty())
        refuse(ec::invalid_config, why);
      else if (!validate_only)
        topics.push_back(i);
    } else if (res.resource_type == kafka::config_resource::broker) {
      std::string patch;
      if (auto why = broker_patch(res, replace, patch); !why.empty())
        refuse(ec::invalid_config, why);
      else if (!ctx->metadata)
        refuse(ec::invalid_request, "cluster defaults are dynamic only in a cluster (the metadata log); set "
                                    "Cluster.NumPartitions, and each topic's config");
      else if (!validate_only)
        brokers.emplace_back(i, std::move(patch));
    } else {
      refuse(ec::invalid_request, "resource type " + std::to_string(res.resource_type)
                                    + " is not supported (topics: 2, brokers: 4)");
    }
  }
  auto g = gather::make(topics.size() + brokers.size(), [resp, done] {
    int errors = 0;
    for (const auto& r : *resp)
      errors += r.error_code != 0;
    done(std::move(*resp), errors);
  });
  auto fail_for = [g, resp](size_t i) {
    return [g, resp, i](const caf::error& e) {
      auto& r = (*resp)[i];
      r.error_code = change_code(e, ec::invalid_config);
      r.error_message = message_of(e);
      log::get("transport")->warn("kafka.alter_configs_failed resource={} error=\"{}\"", r.resource_name,
                                  *r.error_message);
      g->one();
    };
  };
  auto ok = [g](std::string&) { g->one(); };
  for (auto i : topics) {
    const auto& name = req[i].resource_name;
    if (ctx->metadata)
      ask<std::string>(*ctx->system, *ctx->metadata, ctx->timeout, ok, fail_for(i), config_atom::value, name,
                       std::move(req[i].changes), replace);
    else
      ask<std::string>(*ctx->system, ctx->broker, ctx->timeout, ok, fail_for(i), config_atom::value, name,
                       std::move(req[i].changes), replace);
  }
  for (auto& [i, patch] : brokers)
    ask<std::string>(*ctx->system, *ctx->metadata, ctx->timeout, ok, fail_for(i), config_atom::value,
                     std::move(patch));
}

/// Kafka AlterConfigs: every resource's config replaced.
void alter_configs(const std::shared_ptr<kafka_context>& ctx, kafka::alter_configs_request req, kafka_done done) {
  std::vector<config_alteration> resources;
  for (auto& res : req.resources) {
    config_alteration a{res.resource_type, std::move(res.resource_name), {}, 0, {}};
    for (auto& c : res.configs)
      a.changes.push_back({std::move(c.name), std::move(c.value)});
    resources.push_back(std::move(a));
  }
  change_configs(ctx, std::move(resources), true, req.validate_only, [done](auto responses, int errors) {
    kafka::alter_configs_response resp;
    resp.responses = std::move(responses);
    done(std::move(resp), errors);
  });
}

/// One IncrementalAlterConfigs resource as changes: SET (0) a value, DELETE
/// (1) back to the default. As Kafka (ConfigAdminManager): APPEND (2) and
/// SUBTRACT (3) are only for list configs, and moonmq has none, so 40
/// INVALID_CONFIG naming the key; a SET without a value, a key named twice
/// or an unknown operation 42 INVALID_REQUEST.
config_alteration incremental_alteration(kafka::incremental_alter_configs_resource& res) {
  config_alteration a{res.resource_type, std::move(res.resource_name), {}, 0, {}};
  std::set<std::string> names;
  for (auto& c : res.configs) {
    auto refuse = [&](int16_t code, std::string why) {
      if (a.refused == 0) {
        a.refused = code;
        a.why = std::move(why);
      }
    };
    if (!names.insert(c.name).second)
      refuse(ec::invalid_request, "config." + c.name + ": named more than once");
    if (c.config_operation == kafka::config_op::set) {
      if (!c.value)
        refuse(ec::invalid_request, "config." + c.name + ": SET needs a value (DELETE resets it to the default)");
      a.changes.push_back({std::move(c.name), std::move(c.value)});
    } else if (c.config_operation == kafka::config_op::remove) {
      a.changes.push_back({std::move(c.name), std::nullopt});
    } else if (c.config_operation == kafka::config_op::append || c.config_operation == kafka::config_op::subtract) {
      refuse(ec::invalid_config, "config." + c.name + ": "
                                   + (c.config_operation == kafka::config_op::append ? "APPEND" : "SUBTRACT")
                                   + " is only allowed for list configs, and " + c.name + " is not one");
    } else {
      refuse(ec::invalid_request, "config." + c.name + ": unknown operation "
                                    + std::to_string(c.config_operation)
                                    + " (SET 0, DELETE 1, APPEND 2, SUBTRACT 3)");
    }
  }
  return a;
}

/// Kafka IncrementalAlterConfigs (KIP-339): each resource's changes merged
/// into its config; keys not named keep their values.
void incremental_alter_configs(const std::shared_ptr<kafka_context>& ctx,
                               kafka::incremental_alter_configs_request req, kafka_done done) {
  std::vector<config_alteration> resources;
  for (auto& res : req.resources)
    resources.push_back(incremental_alteration(res));
  change_configs(ctx, std::move(resources), false, req.validate_only, [done](auto responses, int errors) {
    kafka::incremental_alter_configs_response resp;
    resp.responses = std::move(responses);
    done(std::move(resp), errors);
  });
}

// --- DeleteRecords -----------------------------------------------------------

/// Kafka DeleteRecords (KIP-107): each partition's log start advanced to the
/// requested offset (-1: the log end) by its owner (partition_actor
/// delete_records_atom), low_watermark = the log start after it. Per
/// partition: OFFSET_OUT_OF_RANGE for an offset above the log end or below
/// -1, NOT_LEADER_OR_FOLLOWER on another broker (or a partition sealed for a
/// move), UNKNOWN_TOPIC_OR_PARTITION, REQUEST_TIMED_OUT past timeout_ms
/// (bounded by the broker's request timeout).
void delete_records(const std::shared_ptr<kafka_context>& ctx, kafka::delete_records_request req, kafka_done done) {
  auto resp = std::make_shared<kafka::delete_records_response>();
  size_t parts = 0;
  for (const auto& t : req.topics) {
    resp->topics.push_back({t.name, {}});
    for (const auto& p : t.partitions) {
      resp->topics.back().partitions.push_back({p.partition_index, -1, 0});
      ++parts;
    }
  }
  auto g = gather::make(parts, [resp, done] {
    int errors = 0;
    for (const auto& t : resp->topics)
      for (const auto& p : t.partitions)
        errors += p.error_code != 0;
    done(std::move(*resp), errors);
  });
  const auto timeout =
    req.timeout_ms > 0 ? std::min(ctx->timeout, std::chrono::milliseconds{req.timeout_ms}) : ctx->timeout;
  auto topics = ctx->catalog->get();
  for (size_t ti = 0; ti < req.topics.size(); ++ti)
    for (size_t pi = 0; pi < req.topics[ti].partitions.size(); ++pi) {
      auto* slot = &resp->topics[ti].partitions[pi];
      const auto offset = req.topics[ti].partitions[pi].offset;
      partition_actor actor;
      if (offset < -1)
        slot->error_code = ec::offset_out_of_range;
      else
        slot->error_code = kafka_locate(*ctx, *topics, req.topics[ti].name, slot->partition_index, actor);
      if (slot->error_code != 0) {
        g->one();
        continue;
      }
      ask<int64_t>(
        *ctx->system, actor, timeout,
        [g, slot](int64_t& start) {
          slot->low_watermark = start;
          g->one();
        },
        [g, slot](const caf::error& e) {
          slot->error_code = kafka_code_of(e);
          g->one();
        },
        delete_records_atom::value, offset, false);
    }
}

// --- DescribeCluster ---------------------------------------------------------

/// AclOperation codes of what a client may do to the cluster (Kafka's
/// cluster resource without an authorizer): CREATE 5, ALTER 7, DESCRIBE
/// 8, CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11,
/// IDEMPOTENT_WRITE 12.
constexpr int32_t cluster_operations =
  (1 << 5) | (1 << 7) | (1 << 8) | (1 << 9) | (1 << 10) | (1 << 11) | (1 << 12);

/// Kafka DescribeCluster (KIP-700): the brokers and controller Metadata
/// gives, and the cluster id.
void describe_cluster(const kafka_context& ctx, const kafka::describe_cluster_request& req, kafka_done done) {
  kafka::describe_cluster_response resp;
  resp.cluster_id = kafka_cluster_id;
  resp.controller_id = kafka_controller_id(ctx);
  std::set<std::string> listed;
  for (auto& b : kafka_brokers(ctx, listed))
    resp.brokers.push_back({b.node_id, std::move(b.host), b.port, std::move(b.rack)});
  if (req.include_cluster_authorized_operations)
    resp.cluster_authorized_operations = cluster_operations;
  done(std::move(resp), 0);
}

}  // namespace

bool handle_kafka_admin_request(const std::shared_ptr<kafka_context>& ctx, kafka::request& req, kafka_done& done) {
  auto version = req.header.api_version;
  if (auto* cp = std::get_if<kafka::create_partitions_request>(&req.body))
    create_partitions(ctx, std::move(*cp), std::move(done));
  else if (auto* dc = std::get_if<kafka::describe_configs_request>(&req.body))
    describe_configs(ctx, version, std::move(*dc), std::move(done));
  else if (auto* ac = std::get_if<kafka::alter_configs_request>(&req.body))
    alter_configs(ctx, std::move(*ac), std::move(done));
  else if (auto* ia = std::get_if<kafka::incremental_alter_configs_request>(&req.body))
    incremental_alter_configs(ctx, std::move(*ia), std::move(done));
  else if (auto* dr = std::get_if<kafka::delete_records_request>(&req.body))
    delete_records(ctx, std::move(*dr), std::move(done));
  else if (auto* cl = std::get_if<kafka::describe_cluster_request>(&req.body))
    describe_cluster(*ctx, *cl, std::move(done));
  else
    return false;
  return true;
}

}  // namespace moonmq::transport
