// Kafka DescribeCluster (60) and IncrementalAlterConfigs (44) on moonmq
// brokers with the metadata log, through raw frames (neither kafkajs 2.2.4
// nor librdkafka 2.0.2 sends them) and checked with the clients' own
// DescribeConfigs; the cluster's topic defaults (log.segment.bytes,
// log.retention.bytes, log.retention.ms) through IncrementalAlterConfigs;
// DeleteRecords (21) through kafkajs and raw frames.
// Label scenario.

#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <thread>
#include <set>

#include "tests/kafka_node/kafka_client.hpp"
#include "tests/kafka_node/raft_kafka.hpp"
#include "tests/node/move_cluster.hpp"
#include "tests/node/node_harness.hpp"
#include "tests/support/ports.hpp"

using namespace moonmq;
using namespace moonmq::test;
using namespace moonmq::test::move;
using namespace std::chrono_literals;

namespace {

/// The body of a response frame in `raw` (header v0, or v1 with its tag
/// byte for flexible versions) decoded as T at `version`.
template <class T>
kafka::result<T> answer_of(const std::string& raw, int16_t version) {
  const size_t header = kafka::response_header_version(T::key, version) == 1 ? 9 : 8;
  if (raw.size() < header)
    return kafka::make_error(kafka::errc::truncated, "no answer (" + std::to_string(raw.size()) + " bytes)");
  return kafka::decode_body<T>(raw.substr(header), version);
}

kafka::describe_cluster_response describe_cluster(uint16_t port, bool operations = false) {
  kafka::describe_cluster_request req;
  req.include_cluster_authorized_operations = operations;
  auto r = answer_of<kafka::describe_cluster_response>(kafka_exchange(port, request_frame(req, 0), 5s), 0);
  REQUIRE(r.ok());
  return *r;
}

int32_t metadata_controller(uint16_t port) {
  kafka::metadata_request req;
  req.topics = std::vector<std::string>{};
  auto r = answer_of<kafka::metadata_response>(kafka_exchange(port, request_frame(req, 1), 5s), 1);
  REQUIRE(r.ok());
  return r->controller_id;
}

/// IncrementalAlterConfigs of one resource at `version`: its answer.
kafka::alter_configs_resource_response incremental(uint16_t port, int16_t version, int8_t type,
                                                   const std::string& name,
                                                   std::vector<kafka::incremental_alterable_config> configs,
                                                   bool validate_only = false) {
  kafka::incremental_alter_configs_request req;
  req.resources = {{type, name, std::move(configs)}};
  req.validate_only = validate_only;
  auto r = answer_of<kafka::incremental_alter_configs_response>(
    kafka_exchange(port, request_frame(req, version), 10s), version);
  REQUIRE(r.ok());
  REQUIRE(r->responses.size() == 1);
  return r->responses[0];
}

}  // namespace

TEST_CASE("kafka DescribeCluster: brokers and the controller as Metadata gives them, on 1 and 3 brokers",
          "[kafka_cluster][metadata]") {
  SECTION("one broker") {
    move_cluster c({"b1"}, kafka_raft());
    c.start(0);
    kafka::describe_cluster_response d;
    REQUIRE(wait_until([&] { return (d = describe_cluster(c.kafka(0))).controller_id == 1; }, 15s));
    CHECK(d.error_code == 0);
    CHECK(d.cluster_id == "moonmq");
    REQUIRE(d.brokers.size() == 1);
    CHECK(d.brokers[0].broker_id == 1);
    CHECK(d.brokers[0].host == "127.0.0.1");
    CHECK(d.brokers[0].port == c.kafka(0));
    CHECK_FALSE(d.brokers[0].rack);
    CHECK(d.controller_id == metadata_controller(c.kafka(0)));
    CHECK(d.cluster_authorized_operations == -2147483647 - 1);  // not asked for
    auto asked = describe_cluster(c.kafka(0), true);
    CHECK(asked.cluster_authorized_operations != -2147483647 - 1);
    CHECK((asked.cluster_authorized_operations & (1 << 8)) != 0);  // DESCRIBE
  }
  SECTION("three brokers") {
    move_cluster c({"b1", "b2", "b3"}, kafka_raft());
    start_three(c);
    auto leader = raft_leader(c);
    REQUIRE(leader);
    for (size_t i = 0; i < 3; ++i) {
      INFO(c.id(i));
      kafka::describe_cluster_response d;
      // Node ids follow the voters in id order: b1 = 1, b2 = 2, b3 = 3.
      REQUIRE(wait_until([&] { return (d = describe_cluster(c.kafka(i))).controller_id == int32_t(*leader) + 1; },
                         10s));
      CHECK(d.controller_id == metadata_controller(c.kafka(i)));
      std::set<std::pair<int32_t, int32_t>> brokers;
      for (const auto& b : d.brokers)
        brokers.insert({b.broker_id, b.port});
      CHECK(brokers == std::set<std::pair<int32_t, int32_t>>{{1, c.kafka(0)}, {2, c.kafka(1)}, {3, c.kafka(2)}});
    }
  }
}

TEST_CASE("kafka IncrementalAlterConfigs: SET and DELETE merge into a topic's config on every broker, untouched "
          "keys keep their values, and bad operations are refused",
          "[kafka_cluster][metadata]") {
  move_cluster c({"b1", "b2", "b3"}, kafka_raft());
  start_three(c);
  REQUIRE(raft_leader(c));
  namespace op = kafka::config_op;
  const auto topic = kafka::config_resource::topic;
  REQUIRE(call(c.client(0), "POST", "/v1/topics",
               json{{"name", "kinc"}, {"partitions", 1},
                    {"config", {{"retention.ms", 600000}, {"segment.bytes", 1048576}}}}
                 .dump())
            .status == 201);
  // Each broker knows the topic once it applied the entry.
  for (size_t i = 0; i < 3; ++i)
    REQUIRE(wait_until([&] { return call(c.client(i), "GET", "/v1/topics/kinc").status == 200; }, 10s));

  // v1 (flexible) at b2: SET one key, DELETE another; retention.ms is not
  // named and keeps its value (AlterConfigs would reset it).
  auto r = incremental(c.kafka(1), 1, topic, "kinc",
                       {{"retention.bytes", op::set, std::string("4096")}, {"segment.bytes", op::remove, {}}});
  INFO(r.error_message.value_or(""));
  CHECK(r.error_code == 0);
  // validate_only (v0): checked, nothing changed.
  CHECK(incremental(c.kafka(1), 0, topic, "kinc", {{"retention.ms", op::set, std::string("1")}}, true).error_code
        == 0);

  // Refusals, each naming the key.
  auto append = incremental(c.kafka(0), 1, topic, "kinc", {{"retention.ms", op::append, std::string("5")}});
  CHECK(append.error_code == kafka::error_code::invalid_config);
  CHECK(append.error_message.value_or("").find("retention.ms") != std::string::npos);
  CHECK(incremental(c.kafka(0), 1, topic, "kinc", {{"retention.ms", op::subtract, std::string("5")}}).error_code
        == kafka::error_code::invalid_config);
  auto bad = incremental(c.kafka(0), 0, topic, "kinc", {{"retention.ms", op::set, std::string("soon")}});
  CHECK(bad.error_code == kafka::error_code::invalid_config);
  CHECK(bad.error_message.value_or("").find("config.retention.ms") != std::string::npos);
  auto unknown_key = incremental(c.kafka(0), 0, topic, "kinc", {{"min.insync.replicas", op::set, std::string("2")}});
  CHECK(unknown_key.error_code == kafka::error_code::invalid_config);
  CHECK(unknown_key.error_message.value_or("").find("min.insync.replicas") != std::string::npos);
  CHECK(incremental(c.kafka(0), 1, topic, "never", {{"retention.ms", op::set, std::string("1")}}).error_code
        == kafka::error_code::unknown_topic_or_partition);
  CHECK(incremental(c.kafka(0), 1, topic, "kinc", {{"retention.ms", 7, std::string("1")}}).error_code
        == kafka::error_code::invalid_request);

  // The cluster default num.partitions (broker resource ""): SET, then
  // DELETE back to Cluster.NumPartitions.
  const auto broker = kafka::config_resource::broker;
  CHECK(incremental(c.kafka(2), 1, broker, "", {{"num.partitions", op::set, std::string("5")}}).error_code == 0);
  CHECK(incremental(c.kafka(2), 1, broker, "2", {{"num.partitions", op::set, std::string("5")}}).error_code
        == kafka::error_code::invalid_config);

  // Every broker applies the merge (b2 answered once it applied it).
  for (size_t i = 0; i < 3; ++i)
    CHECK(wait_until(
      [&] { return call(c.client(i), "GET", "/v1/topics/kinc").raw.find("\"4096\"") != std::string::npos; }, 10s));

  // librdkafka 2.0.2's DescribeConfigs at b3 sees the merge.
  std::string py = "from confluent_kafka.admin import AdminClient, ConfigResource\n"
                   "a = AdminClient({'bootstrap.servers': '127.0.0.1:" + std::to_string(c.kafka(2)) + "'})\n"
                   "for r in [ConfigResource('topic', 'kinc'), ConfigResource('broker', '3')]:\n"
                   "    for e in sorted(a.describe_configs([r], request_timeout=20)[r].result().values(), "
                   "key=lambda e: e.name):\n"
                   "        print(r.restype, e.name, e.value, e.is_default)\n";
  auto [prc, pout] = python_script(c.data_dir(2), "incremental.py", py);
  INFO("confluent-kafka: " << pout);
  CHECK(prc == 0);
  CHECK(pout.find("retention.ms 600000 False") != std::string::npos);  // untouched
  CHECK(pout.find("retention.bytes 4096 False") != std::string::npos);
  CHECK(pout.find("segment.bytes 1073741824 True") != std::string::npos);  // deleted: the default
  CHECK(pout.find("num.partitions 5") != std::string::npos);

  // kafkajs 2.2.4's DescribeConfigs at b1 too.
  auto [rc, out] = kafkajs_admin(
    "127.0.0.1:" + std::to_string(c.kafka(0)),
    "const d=await a.describeConfigs({resources:[{type:2,name:'kinc'}],includeSynonyms:false});"
    "console.log(JSON.stringify(d.resources[0].configEntries.map(e=>[e.configName,e.configValue])));");
  INFO("kafkajs: " << out);
  CHECK(rc == 0);
  CHECK(out.find(R"([["cleanup.policy","delete"],["retention.bytes","4096"],["retention.ms","600000"],)"
                 R"(["segment.bytes","1073741824"]])")
        != std::string::npos);

  // DELETE of the cluster default: back to Cluster.NumPartitions (1).
  CHECK(incremental(c.kafka(0), 0, broker, "", {{"num.partitions", op::remove, {}}}).error_code == 0);
  // b2 describes it once it applied the entry.
  kafka::describe_configs_request dc;
  dc.resources = {{broker, "", std::vector<std::string>{"num.partitions"}}};
  kafka::describe_configs_entry entry;
  CHECK(wait_until(
    [&] {
      auto d = answer_of<kafka::describe_configs_response>(kafka_exchange(c.kafka(1), request_frame(dc, 1), 5s), 1);
      if (!d.ok() || d->results.size() != 1 || d->results[0].configs.size() != 1)
        return false;
      entry = d->results[0].configs[0];
      return entry.config_source == kafka::config_source::static_broker;
    },
    10s));
  CHECK(entry.value == std::string("1"));
}

/// DescribeConfigs v1 of one resource with synonyms: its entries by name.
std::map<std::string, kafka::describe_configs_entry> described(uint16_t port, int8_t type, const std::string& name) {
  kafka::describe_configs_request req;
  req.resources = {{type, name, std::nullopt}};
  req.include_synonyms = true;
  auto r = answer_of<kafka::describe_configs_response>(kafka_exchange(port, request_frame(req, 1), 5s), 1);
  std::map<std::string, kafka::describe_configs_entry> out;
  if (r.ok() && r->results.size() == 1)
    for (const auto& e : r->results[0].configs)
      out[e.name] = e;
  return out;
}

TEST_CASE("kafka topic defaults: log.segment.bytes, log.retention.bytes and log.retention.ms are dynamic cluster "
          "config: every copy that does not set a key follows it at runtime, a broker that was down catches up, "
          "and the retention is enforced",
          "[kafka_cluster][metadata]") {
  // The defaults are keys of the metadata log's dynamic settings
  // (LogSegmentBytes, ...; docs/metadata.md "Dynamic settings"); a broker
  // reads a topic's config over them, so a change re-adopts every copy.
  move_cluster c({"b1", "b2", "b3"}, kafka_raft({"Storage.RetentionCheckMs=200"}));
  start_three(c);
  REQUIRE(raft_leader(c));
  namespace op = kafka::config_op;
  namespace src = kafka::config_source;
  const auto broker = kafka::config_resource::broker;
  const auto topic = kafka::config_resource::topic;
  // The config a broker's own copy holds (its durable topic catalogue).
  auto catalogue = [&](size_t i, const std::string& name) { return catalogue_config(c.data_dir(i), name); };
  REQUIRE(call(c.client(0), "POST", "/v1/topics", json{{"name", "kdef"}, {"partitions", 1}}.dump()).status == 201);
  // kown sets retention.bytes itself, to the built-in value: it keeps it.
  REQUIRE(call(c.client(0), "POST", "/v1/topics",
               json{{"name", "kown"}, {"partitions", 1}, {"config", {{"retention.bytes", -1}}}}.dump())
            .status == 201);
  for (size_t i = 0; i < 3; ++i)
    REQUIRE(wait_until([&] { return catalogue(i, "kown")["retention.bytes"] == -1; }, 10s));

  // Refused by name: a value out of the topic key's range, a key that is
  // not a dynamic default.
  auto small = incremental(c.kafka(1), 1, broker, "", {{"log.segment.bytes", op::set, std::string("100")}});
  CHECK(small.error_code == kafka::error_code::invalid_config);
  CHECK(small.error_message.value_or("") == "config.log.segment.bytes: must be at least 1024");
  auto unknown = incremental(c.kafka(1), 1, broker, "", {{"log.retention.hours", op::set, std::string("1")}});
  CHECK(unknown.error_code == kafka::error_code::invalid_config);
  CHECK(unknown.error_message.value_or("").find("log.retention.hours") != std::string::npos);

  // SET at b2: segments of about one record, 2048 bytes kept.
  auto set = incremental(c.kafka(1), 1, broker, "",
                         {{"log.segment.bytes", op::set, std::string("1024")},
                          {"log.retention.bytes", op::set, std::string("2048")}});
  INFO(set.error_message.value_or(""));
  REQUIRE(set.error_code == 0);
  for (size_t i = 0; i < 3; ++i) {
    INFO(c.id(i));
    CHECK(wait_until([&] { return catalogue(i, "kdef")["retention.bytes"] == 2048; }, 10s));
    CHECK(catalogue(i, "kdef")["segment.bytes"] == 1024);
    CHECK(wait_until([&] { return catalogue(i, "kown")["segment.bytes"] == 1024; }, 10s));
    CHECK(catalogue(i, "kown")["retention.bytes"] == -1);  // its own key wins
  }

  // Enforced by the owner's partitions: kdef drops its oldest segments,
  // kown keeps every record.
  std::string value(600, 'd');
  for (const char* name : {"kdef", "kown"})
    for (int n = 0; n < 12; ++n)
      REQUIRE(call(c.client(0), "POST", std::string("/v1/topics/") + name + "/records",
                   json{{"records", json::array({json{{"value", value}, {"partition", 0}}})}}.dump())
                .status == 200);
  auto log_start = [&](const char* name) {
    auto a = call(c.client(0), "GET", std::string("/v1/topics/") + name + "/partitions/0/records?max_records=1");
    return a.status == 200 ? a.body["log_start_offset"].get<int64_t>() : -1;
  };
  CHECK(wait_until([&] { return log_start("kdef") >= 6; }, 10s));
  std::this_thread::sleep_for(600ms);  // three more retention checks
  CHECK(log_start("kown") == 0);

  // DescribeConfigs at b3, with synonyms in Kafka's order of precedence.
  auto kdef = described(c.kafka(2), topic, "kdef");
  REQUIRE(kdef.count("retention.bytes") == 1);
  const auto& rb = kdef["retention.bytes"];
  CHECK(rb.value == std::string("2048"));
  CHECK(rb.config_source == src::dynamic_default_broker);
  REQUIRE(rb.synonyms.size() == 2);
  CHECK(rb.synonyms[0].name == "log.retention.bytes");
  CHECK(rb.synonyms[0].value == std::string("2048"));
  CHECK(rb.synonyms[1].source == src::default_config);
  CHECK(rb.synonyms[1].value == std::string("-1"));
  CHECK(kdef["retention.ms"].config_source == src::default_config);
  auto kown = described(c.kafka(2), topic, "kown");
  REQUIRE(kown["retention.bytes"].synonyms.size() == 3);
  CHECK(kown["retention.bytes"].config_source == src::dynamic_topic);
  CHECK(kown["retention.bytes"].synonyms[1].value == std::string("2048"));
  auto cluster = described(c.kafka(2), broker, "");
  CHECK(cluster["log.segment.bytes"].value == std::string("1024"));
  CHECK(cluster["log.segment.bytes"].config_source == src::dynamic_default_broker);
  CHECK(cluster["log.retention.ms"].value == std::string("-1"));
  CHECK(cluster["log.retention.ms"].config_source == src::default_config);

  // librdkafka 2.0.2 sees the same at b1.
  std::string py = "from confluent_kafka.admin import AdminClient, ConfigResource\n"
                   "a = AdminClient({'bootstrap.servers': '127.0.0.1:" + std::to_string(c.kafka(0)) + "'})\n"
                   "r = ConfigResource('topic', 'kdef')\n"
                   "for e in sorted(a.describe_configs([r], request_timeout=20)[r].result().values(), "
                   "key=lambda e: e.name):\n"
                   "    print(e.name, e.value, e.is_default, e.source)\n";
  auto [prc, pout] = python_script(c.data_dir(0), "defaults.py", py);
  INFO("confluent-kafka: " << pout);
  CHECK(prc == 0);
  CHECK(pout.find("retention.bytes 2048 False 3") != std::string::npos);  // DYNAMIC_DEFAULT_BROKER_CONFIG
  CHECK(pout.find("segment.bytes 1024 False 3") != std::string::npos);
  CHECK(pout.find("retention.ms -1 True 5") != std::string::npos);

  // Over HTTP: the source of each value, and the settings object.
  auto d = call(c.client(1), "GET", "/v1/topics/kdef");
  REQUIRE(d.status == 200);
  CHECK(d.body["config"][1] == json{{"name", "retention.bytes"}, {"value", "2048"}, {"default", true},
                                     {"source", "cluster"}, {"read_only", false}});
  auto settings = call(c.admin(1), "GET", "/admin/balancer");
  CHECK(settings.body["dynamic"]["LogRetentionBytes"] == 2048);

  // A topic created now takes the defaults too.
  REQUIRE(call(c.client(2), "POST", "/v1/topics", json{{"name", "klate"}, {"partitions", 1}}.dump()).status == 201);
  for (size_t i = 0; i < 3; ++i)
    CHECK(wait_until([&] { return catalogue(i, "klate")["segment.bytes"] == 1024; }, 10s));

  // b3 is down while the retention default goes back to built in; it
  // catches up when it returns.
  c.stop(2);
  REQUIRE(wait_until(
    [&] {
      return incremental(c.kafka(0), 0, broker, "", {{"log.retention.bytes", op::remove, {}}}).error_code == 0;
    },
    15s));
  for (size_t i = 0; i < 2; ++i)
    CHECK(wait_until([&] { return catalogue(i, "kdef")["retention.bytes"] == -1; }, 10s));
  CHECK(catalogue(2, "kdef")["retention.bytes"] == 2048);
  c.start(2);
  CHECK(wait_until([&] { return catalogue(2, "kdef")["retention.bytes"] == -1; }, 20s));
  CHECK(catalogue(2, "kdef")["segment.bytes"] == 1024);  // still the cluster's
}

TEST_CASE("kafka IncrementalAlterConfigs and DescribeCluster on a standalone broker (no metadata log)",
          "[kafka_cluster][metadata]") {
  // Without a Cluster section the broker actor keeps whole configs; the
  // merge happens there, and num.partitions is not dynamic.
  temp_dir dir{"moonmq-kafka-admin"};
  const auto port = reserve_port();
  node_process node(dir, {"Kafka.Enabled=true", "Kafka.Port=" + std::to_string(port)});
  auto admin = node.wait_ready(20s);
  REQUIRE(admin);
  auto client = *node.client_port();
  REQUIRE(call(client, "POST", "/v1/topics",
               json{{"name", "solo"}, {"partitions", 1}, {"config", {{"retention.ms", 600000}}}}.dump())
            .status == 201);
  namespace op = kafka::config_op;
  CHECK(incremental(port, 1, kafka::config_resource::topic, "solo",
                    {{"retention.bytes", op::set, std::string("4096")}})
          .error_code == 0);
  CHECK(incremental(port, 0, kafka::config_resource::broker, "", {{"num.partitions", op::set, std::string("3")}})
          .error_code == kafka::error_code::invalid_request);
  auto d = call(client, "GET", "/v1/topics/solo");
  REQUIRE(d.status == 200);
  INFO(d.raw);
  CHECK(d.body["config"][1] == json{{"name", "retention.bytes"}, {"value", "4096"}, {"default", false},
                                     {"source", "topic"}, {"read_only", false}});
  CHECK(d.body["config"][2] == json{{"name", "retention.ms"}, {"value", "600000"}, {"default", false},
                                     {"source", "topic"}, {"read_only", false}});
  auto cluster = describe_cluster(port);
  CHECK(cluster.controller_id == 1);
  CHECK(cluster.controller_id == metadata_controller(port));
  REQUIRE(cluster.brokers.size() == 1);
  CHECK(cluster.brokers[0].port == port);
}

TEST_CASE("kafka DeleteRecords: kafkajs deleteTopicRecords moves the log start, kept across a restart, errors by "
          "raw frames",
          "[kafka_cluster][delete_records]") {
  temp_dir dir{"moonmq-kafka-delrec"};
  const auto port = reserve_port();
  const std::vector<std::string> settings{"Kafka.Enabled=true", "Kafka.Port=" + std::to_string(port)};
  auto node = std::make_unique<node_process>(dir, settings);
  REQUIRE(node->wait_ready(20s));
  auto client = *node->client_port();
  REQUIRE(call(client, "POST", "/v1/topics", json{{"name", "dr"}, {"partitions", 1}}.dump()).status == 201);
  fill(client, "dr", 0, 10, 5, 50, "dr");  // batches [0, 5) and [5, 10)
  const auto broker = "127.0.0.1:" + std::to_string(port);
  auto [rc, out] = kafkajs_admin(
    broker,
    "await a.fetchTopicMetadata({topics:['dr']});"  // kafkajs deletes only in topics it has metadata of
    "await a.deleteTopicRecords({topic:'dr',partitions:[{partition:0,offset:'7'}]});"
    "const o=await a.fetchTopicOffsets('dr');console.log('low='+o[0].low+' high='+o[0].high);");
  INFO("kafkajs: " << out);
  CHECK(rc == 0);
  CHECK(out.find("low=7 high=10") != std::string::npos);
  // A consumer from the earliest offset starts at 7.
  auto page = call(client, "GET", "/v1/topics/dr/partitions/0/records");
  REQUIRE(page.status == 200);
  CHECK(page.body["log_start_offset"] == 7);
  CHECK(page.body["records"][0]["offset"] == 7);

  auto delete_records = [&](int16_t version, const std::string& topic, int64_t offset) {
    kafka::delete_records_request req;
    req.topics = {{topic, {{0, offset}}}};
    req.timeout_ms = 5000;
    auto r = answer_of<kafka::delete_records_response>(kafka_exchange(port, request_frame(req, version), 10s),
                                                       version);
    REQUIRE(r.ok());
    REQUIRE(r->topics.size() == 1);
    REQUIRE(r->topics[0].partitions.size() == 1);
    return r->topics[0].partitions[0];
  };
  namespace ec = kafka::error_code;
  for (int16_t v : {0, 1, 2}) {
    INFO("v" << v);
    CHECK(delete_records(v, "dr", 11).error_code == ec::offset_out_of_range);
    CHECK(delete_records(v, "dr", -2).error_code == ec::offset_out_of_range);
    CHECK(delete_records(v, "nope", 1).error_code == ec::unknown_topic_or_partition);
    auto below = delete_records(v, "dr", 3);  // at or below: unchanged
    CHECK(below.error_code == 0);
    CHECK(below.low_watermark == 7);
  }
  auto at_end = delete_records(2, "dr", 8);
  CHECK(at_end.error_code == 0);
  CHECK(at_end.low_watermark == 8);

  node.reset();  // the process ends
  node = std::make_unique<node_process>(dir, settings);
  REQUIRE(node->wait_ready(20s));
  auto [rc2, out2] = kafkajs_admin(broker, "const o=await a.fetchTopicOffsets('dr');"
                                           "console.log('low='+o[0].low+' high='+o[0].high);");
  INFO("kafkajs after restart: " << out2);
  CHECK(rc2 == 0);
  CHECK(out2.find("low=8 high=10") != std::string::npos);
}

TEST_CASE("kafka DeleteRecords on three Raft brokers: the owner answers through any bootstrap broker, the others "
          "NOT_LEADER_OR_FOLLOWER",
          "[kafka_cluster][delete_records]") {
  move_cluster c({"b1", "b2", "b3"}, kafka_raft());
  start_three(c);
  REQUIRE(raft_leader(c));
  REQUIRE(call(c.client(0), "POST", "/v1/topics", json{{"name", "dr3"}, {"partitions", 1}}.dump()).status == 201);
  std::string owner;
  REQUIRE(wait_until(
    [&] {
      auto d = call(c.client(0), "GET", "/v1/topics/dr3");
      if (d.status != 200 || !d.body["partitions"][0]["owner"].is_string())
        return false;
      owner = d.body["partitions"][0]["owner"].get<std::string>();
      return true;
    },
    10s));
  size_t own = 0;
  while (c.id(own) != owner)
    ++own;
  const size_t other = (own + 1) % 3;
  fill(c.client(own), "dr3", 0, 12, 4, 50, "dr3");  // batches of 4
  // kafkajs bootstrapped on a broker that does not own the partition.
  auto [rc, out] = kafkajs_admin(
    "127.0.0.1:" + std::to_string(c.kafka(other)),
    "await a.fetchTopicMetadata({topics:['dr3']});"
    "await a.deleteTopicRecords({topic:'dr3',partitions:[{partition:0,offset:'6'}]});"
    "const o=await a.fetchTopicOffsets('dr3');console.log('low='+o[0].low+' high='+o[0].high);");
  INFO("kafkajs: " << out);
  CHECK(rc == 0);
  CHECK(out.find("low=6 high=12") != std::string::npos);
  // A raw request at a broker that does not own it.
  kafka::delete_records_request req;
  req.topics = {{"dr3", {{0, 8}}}};
  req.timeout_ms = 5000;
  auto r = answer_of<kafka::delete_records_response>(kafka_exchange(c.kafka(other), request_frame(req, 2), 10s), 2);
  REQUIRE(r.ok());
  REQUIRE(r->topics.size() == 1);
  CHECK(r->topics[0].partitions[0].error_code == kafka::error_code::not_leader_or_follower);
  auto page = call(c.client(own), "GET", "/v1/topics/dr3/partitions/0/records");
  REQUIRE(page.status == 200);
  CHECK(page.body["records"][0]["offset"] == 6);
  // Kept when the owner is killed and restarted.
  c.kill(own);
  c.restart(own);
  auto [rc2, out2] = kafkajs_admin("127.0.0.1:" + std::to_string(c.kafka(own)),
                                   "const o=await a.fetchTopicOffsets('dr3');"
                                   "console.log('low='+o[0].low+' high='+o[0].high);");
  INFO("kafkajs after restart: " << out2);
  CHECK(rc2 == 0);
  CHECK(out2.find("low=6 high=12") != std::string::npos);
}
