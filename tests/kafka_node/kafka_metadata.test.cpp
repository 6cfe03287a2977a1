// The Kafka listener on 3 brokers with the metadata log (docs/metadata.md):
// a topic created through Kafka exists on every broker once its entry
// commits, so kcat bootstrapped at any broker produces to it and consumes
// it, Metadata names the Raft leader as controller, a group's commits work
// whichever broker coordinates the group (the coordinator used to take a
// topic it did not hold in its ownership table for its own and answer
// OffsetCommit with 3 UNKNOWN_TOPIC_OR_PARTITION), and topic administration
// (DeleteTopics, CreatePartitions, configs, replica assignments) reaches
// every broker. Groups: kafka_metadata_groups.test.cpp. Label scenario.

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "cluster/group_placement.hpp"
#include "tests/kafka_node/kafka_client.hpp"
#include "tests/kafka_node/raft_kafka.hpp"
#include "tests/node/move_cluster.hpp"
#include "tests/node/placement_checks.hpp"
#include "tests/support/raw_http.hpp"

using namespace moonmq;
using namespace moonmq::test;
using namespace moonmq::test::move;
using namespace std::chrono_literals;

namespace {

/// kcat -C output "%o %s" lines as offset → value.
std::map<int64_t, std::string> parse_offsets(const std::string& text) {
  std::map<int64_t, std::string> out;
  for (const auto& line : lines(text)) {
    std::istringstream in(line);
    int64_t o = -1;
    std::string v;
    if (in >> o >> v)
      out[o] = v;
  }
  return out;
}

}  // namespace

TEST_CASE("kafka listener with the metadata log: a topic created through Kafka serves through every broker and "
          "commits work whichever broker coordinates the group",
          "[kafka_cluster][metadata]") {
  move_cluster c({"b1", "b2", "b3"}, kafka_raft());
  start_three(c);
  auto leader = raft_leader(c);
  INFO(c.all_logs());
  REQUIRE(leader);
  auto addr = [&](size_t i) { return "127.0.0.1:" + std::to_string(c.kafka(i)); };
  temp_dir dir("moonmq-kmeta");

  // Created by auto-creation at b1 (a producer's Metadata request), one
  // message per line; more through b2 and b3, whose Metadata points them at
  // the owner.
  std::map<std::string, int> sent;
  int n = 0;
  for (size_t via = 0; via < 3; ++via) {
    auto file = dir.path() + "/in" + std::to_string(via);
    {
      std::ofstream out(file);
      for (int i = 0; i < 10; ++i) {
        auto v = "v" + std::to_string(++n) + "-" + c.id(via);
        out << v << "\n";
        sent[v] = 0;
      }
    }
    auto [rc, text] = sh("timeout 30 kcat -b " + addr(via) + " -P -t kt -X allow.auto.create.topics=true"
                         " -X message.timeout.ms=20000 < " + file + " 2>&1");
    INFO("produce through " << c.id(via) << ": " << text);
    REQUIRE(rc == 0);
  }

  // Every broker lists the topic (it exists cluster-wide) and Metadata at
  // each names the Raft leader as controller (kcat: "controller" marks it).
  for (size_t i = 0; i < 3; ++i) {
    auto topics = call(c.client(i), "GET", "/v1/topics");
    INFO(c.id(i) << ": " << topics.raw);
    CHECK(topics.raw.find("\"kt\"") != std::string::npos);
    auto [lrc, meta] = sh("timeout 20 kcat -b " + addr(i) + " -L 2>&1");
    INFO(meta);
    CHECK(meta.find("broker " + std::to_string(*leader + 1) + " at") != std::string::npos);
    auto controller_line = meta.find("(controller)");
    REQUIRE(controller_line != std::string::npos);
    auto line_start = meta.rfind('\n', controller_line);
    CHECK(meta.substr(line_start, controller_line - line_start).find("broker " + std::to_string(*leader + 1) + " ")
          != std::string::npos);
    CHECK(meta.find("(controller)", controller_line + 1) == std::string::npos);  // one controller only
  }

  // Consumed through every broker: all 30 messages at offsets 0..29.
  for (size_t i = 0; i < 3; ++i) {
    auto [rc, text] = sh("timeout 30 kcat -b " + addr(i) + " -C -t kt -p 0 -o beginning -e -f '%o %s\\n' 2>/dev/null");
    auto got = parse_offsets(text);
    INFO("consume through " << c.id(i) << ": " << text);
    CHECK(rc == 0);
    CHECK(got.size() == 30);
    std::set<std::string> values;
    for (const auto& [o, v] : got)
      values.insert(v);
    CHECK(values.size() == 30);
    CHECK((got.empty() || (got.begin()->first == 0 && got.rbegin()->first == 29)));
  }

  // One group per coordinator: each consumes to the end and commits; the
  // committed offset (kept with the partition's owner) is the log end,
  // whoever coordinates.
  for (size_t coord = 0; coord < 3; ++coord) {
    auto group = group_coordinated_by(c.id(coord));
    auto boot = (coord + 1) % 3;  // bootstrapped elsewhere than the coordinator
    auto [rc, text] = sh("timeout 60 kcat -b " + addr(boot) + " -G " + group
                         + " -X auto.offset.reset=earliest -X auto.commit.interval.ms=100 -e -f '%o %s\\n' kt 2>&1");
    INFO("group " << group << " coordinated by " << c.id(coord) << ", kcat at " << c.id(boot) << ": " << text);
    CHECK(rc == 0);
    CHECK(parse_offsets(text).size() == 30);
    std::string committed;
    CHECK(wait_until(
      [&] {
        auto a = call(c.client(coord), "GET", "/v1/groups/" + group + "/offsets");
        committed = a.raw;
        if (a.status != 200 || !a.body["offsets"].is_array())
          return false;
        for (auto& o : a.body["offsets"])
          if (o.value("topic", "") == "kt" && o.value("partition", -1) == 0 && o.value("offset", int64_t{-1}) == 30)
            return true;
        return false;
      },
      10s));
    INFO("committed: " << committed);
    // A second member of the group resumes after the commit: nothing to read.
    auto [rc2, again] = sh("timeout 60 kcat -b " + addr(coord) + " -G " + group
                           + " -X auto.offset.reset=earliest -e -f '%o %s\\n' kt 2>/dev/null");
    INFO("resumed: " << again);
    CHECK(parse_offsets(again).empty());
  }
}

TEST_CASE("kafka listener with the metadata log: num.partitions is a cluster default that changes at runtime "
          "through the metadata log",
          "[kafka_cluster][metadata]") {
  // Cluster.NumPartitions is Kafka's num.partitions; the metadata log's
  // NumPartitions (PATCH /admin/balancer on any broker) overrides it on
  // every broker, for auto-creation, CreateTopics with -1 and an HTTP create
  // without a count; null gives the configured value back.
  move_cluster c({"b1", "b2", "b3"}, kafka_raft({"Cluster.NumPartitions=2"}));
  start_three(c);
  REQUIRE(raft_leader(c));
  auto addr = [&](size_t i) { return "127.0.0.1:" + std::to_string(c.kafka(i)); };
  // The partition count of `topic` as broker i lists it (-1 when absent).
  auto count_on = [&](size_t i, const std::string& topic) {
    auto topics = call(c.client(i), "GET", "/v1/topics").body;
    if (topics.is_object() && topics.contains("topics"))
      topics = topics["topics"];
    if (topics.is_array())
      for (const auto& t : topics)
        if (t.value("name", "") == topic)
          return t.value("partitions", -1);
    return -1;
  };
  auto auto_create = [&](size_t via, const std::string& topic) {
    auto [rc, text] = sh("echo v | timeout 30 kcat -b " + addr(via) + " -P -t " + topic
                         + " -X allow.auto.create.topics=true -X message.timeout.ms=20000 2>&1");
    INFO("produce through " << c.id(via) << ": " << text);
    REQUIRE(rc == 0);
  };
  auto http_create = [&](size_t via, const std::string& topic) {
    auto a = call(c.client(via), "POST", "/v1/topics", json{{"name", topic}}.dump());
    INFO(a.raw);
    REQUIRE(a.status == 201);
    return a.body.value("partitions", -1);
  };

  auto_create(0, "np2");
  CHECK(http_create(1, "hp2") == 2);
  auto patch = call(c.admin(1), "PATCH", "/admin/balancer", json{{"NumPartitions", 4}}.dump());
  INFO(patch.raw);
  REQUIRE(patch.status == 200);
  for (int bad_count : {0, 10001}) {  // a create's bounds
    auto bad = call(c.admin(1), "PATCH", "/admin/balancer", json{{"NumPartitions", bad_count}}.dump());
    CHECK(bad.status == 400);
  }
  // Every broker applies the entry before it answers a later create.
  REQUIRE(wait_until([&] {
    for (size_t i = 0; i < 3; ++i) {
      auto s = call(c.admin(i), "GET", "/admin/balancer").body;
      if (!s.is_object() || !s.contains("dynamic") || !s["dynamic"].is_object()
          || s["dynamic"].value("NumPartitions", 0) != 4)
        return false;
    }
    return true;
  }, 10s));
  auto_create(2, "np4");
  CHECK(http_create(0, "hp4") == 4);
  {
    // CreateTopics with num_partitions -1: kafkajs's admin client sends -1
    // when no count is given.
    auto [rc, out] = kafkajs_admin(addr(1), "await a.createTopics({topics:[{topic:'kj4'}]});");
    INFO("kafkajs createTopics: " << out);
    CHECK(rc == 0);
  }
  {
    // librdkafka 2.0.2 sends -1 partitions and replication factor only with
    // CreateTopics v4 (KIP-464) and refuses locally when the broker
    // advertises less.
    std::ofstream f(c.data_dir(0) + "/create_default.py");
    f << "from confluent_kafka.admin import AdminClient, NewTopic\n"
         "a = AdminClient({'bootstrap.servers': '" + addr(0) + "'})\n"
         "fs = a.create_topics([NewTopic('rk4', num_partitions=-1, replication_factor=-1)], request_timeout=20)\n"
         "fs['rk4'].result()\n"
         "print('created')\n";
  }
  {
    auto [rc, out] = sh("timeout 60 /usr/bin/python3 " + c.data_dir(0) + "/create_default.py 2>&1");
    INFO("confluent-kafka create_topics: " << out);
    CHECK(rc == 0);
    CHECK(out.find("created") != std::string::npos);
  }
  auto unset = call(c.admin(2), "PATCH", "/admin/balancer", json{{"NumPartitions", nullptr}}.dump());
  REQUIRE(unset.status == 200);
  REQUIRE(wait_until([&] {
    auto s = call(c.admin(1), "GET", "/admin/balancer").body;
    return s.is_object() && s.contains("dynamic") && s["dynamic"].is_object()
           && !s["dynamic"].contains("NumPartitions");
  }, 10s));
  CHECK(http_create(1, "hp2b") == 2);
  for (size_t i = 0; i < 3; ++i) {
    INFO(c.id(i));
    CHECK(count_on(i, "np2") == 2);
    CHECK(count_on(i, "hp2") == 2);
    CHECK(count_on(i, "np4") == 4);
    CHECK(count_on(i, "hp4") == 4);
    CHECK(count_on(i, "kj4") == 4);
    CHECK(count_on(i, "rk4") == 4);
    CHECK(count_on(i, "hp2b") == 2);
  }
}

TEST_CASE("kafka listener with the metadata log: DeleteTopics through kafkajs and librdkafka deletes a topic on "
          "every broker",
          "[kafka_cluster][metadata]") {
  // DeleteTopics (20) goes through the metadata log like an HTTP DELETE:
  // every broker stops listing the topic; an unknown one is 3
  // UNKNOWN_TOPIC_OR_PARTITION. kafkajs 2.2.4's admin client and librdkafka
  // 2.0.2's (python3-confluent-kafka, Debian) both send it.
  move_cluster c({"b1", "b2", "b3"}, kafka_raft());
  start_three(c);
  REQUIRE(raft_leader(c));
  auto addr = [&](size_t i) { return "127.0.0.1:" + std::to_string(c.kafka(i)); };
  auto listed = [&](size_t i, const std::string& topic) {
    auto a = call(c.client(i), "GET", "/v1/topics");
    return a.status != 200 || a.raw.find("\"" + topic + "\"") != std::string::npos;
  };
  for (const char* t : {"kdel1", "kdel2"}) {
    auto a = call(c.client(0), "POST", "/v1/topics", json{{"name", t}, {"partitions", 2}}.dump());
    REQUIRE(a.status == 201);
  }
  REQUIRE(wait_until([&] { return listed(2, "kdel1") && listed(2, "kdel2"); }, 10s));

  auto [rc, out] = kafkajs_admin(addr(1), "await a.deleteTopics({topics:['kdel1'],timeout:10000});");
  INFO("kafkajs deleteTopics: " << out);
  CHECK(rc == 0);

  // librdkafka's admin client: one known topic, one unknown.
  std::string py = "import sys\n"
                   "from confluent_kafka.admin import AdminClient\n"
                   "a = AdminClient({'bootstrap.servers': '" + addr(2) + "'})\n"
                   "fs = a.delete_topics(['kdel2', 'kdel-never'], operation_timeout=10, request_timeout=20)\n"
                   "for t, f in sorted(fs.items()):\n"
                   "    try:\n"
                   "        f.result()\n"
                   "        print(t, 'deleted')\n"
                   "    except Exception as e:\n"
                   "        print(t, e.args[0].name())\n";
  auto [prc, pout] = python_script(c.data_dir(2), "delete_topics.py", py);
  INFO("confluent-kafka delete_topics: " << pout);
  CHECK(prc == 0);
  CHECK(pout.find("kdel2 deleted") != std::string::npos);
  CHECK(pout.find("kdel-never UNKNOWN_TOPIC_OR_PART") != std::string::npos);  // librdkafka's name for 3

  for (size_t i = 0; i < 3; ++i) {
    INFO(c.id(i));
    CHECK(wait_until([&] { return !listed(i, "kdel1") && !listed(i, "kdel2"); }, 10s));
  }
}

TEST_CASE("kafka listener with the metadata log: CreatePartitions, AlterConfigs and DescribeConfigs through kafkajs "
          "and librdkafka reach every broker, and an altered retention is enforced",
          "[kafka_cluster][metadata]") {
  // CreatePartitions (37) is a `grow` entry and AlterConfigs (33) an
  // `alter` topic entry of the metadata log (docs/metadata.md "Topic
  // configuration"): every broker's copy takes the new count and config
  // (its topics.json and its partitions), DescribeConfigs (32) at any
  // broker describes the log's config, and the partitions enforce it.
  move_cluster c({"b1", "b2", "b3"}, kafka_raft({"Storage.RetentionCheckMs=200"}));
  start_three(c);
  REQUIRE(raft_leader(c));
  auto addr = [&](size_t i) { return "127.0.0.1:" + std::to_string(c.kafka(i)); };
  auto count_on = [&](size_t i, const std::string& topic) {
    auto a = call(c.client(i), "GET", "/v1/topics");
    if (a.status == 200)
      for (const auto& t : a.body["topics"])
        if (t["name"] == topic)
          return t["partitions"].get<int>();
    return -1;
  };
  // The config a broker's own copy holds (its durable topic catalogue).
  auto catalogue = [&](size_t i, const std::string& topic) { return catalogue_config(c.data_dir(i), topic); };
  REQUIRE(call(c.client(0), "POST", "/v1/topics", json{{"name", "kadm"}, {"partitions", 2}}.dump()).status == 201);

  // kafkajs 2.2.4: grow to 4, describe, alter, describe again; a count at
  // or below the current one and an unknown key are refused by name.
  auto [rc, out] = kafkajs_admin(
    addr(1),
    "await a.createPartitions({topicPartitions:[{topic:'kadm',count:4}]});"
    "let d=await a.describeConfigs({resources:[{type:2,name:'kadm'}],includeSynonyms:false});"
    "console.log('before',JSON.stringify(d.resources[0].configEntries.map(e=>[e.configName,e.configValue,e.isDefault,e.readOnly])));"
    "await a.alterConfigs({resources:[{type:2,name:'kadm',configEntries:[{name:'retention.ms',value:'600000'},"
    "{name:'segment.bytes',value:'1024'},{name:'retention.bytes',value:'2048'}]}]});"
    "d=await a.describeConfigs({resources:[{type:2,name:'kadm',configNames:['retention.ms']}],includeSynonyms:false});"
    "console.log('after',JSON.stringify(d.resources[0].configEntries.map(e=>[e.configName,e.configValue,e.isDefault])));"
    "try{await a.createPartitions({topicPartitions:[{topic:'kadm',count:3}]});console.log('shrunk');}"
    "catch(e){console.log('shrink refused',e.type);}"
    "try{await a.alterConfigs({resources:[{type:2,name:'kadm',configEntries:[{name:'min.insync.replicas',value:'2'}]}]});"
    "console.log('altered unknown');}catch(e){console.log('unknown refused',e.type);}"
    "try{await a.alterConfigs({resources:[{type:4,name:'2',configEntries:[{name:'num.partitions',value:'3'}]}]});"
    "console.log('altered one broker');}catch(e){console.log('one broker refused',e.type);}");
  INFO("kafkajs: " << out);
  REQUIRE(rc == 0);
  CHECK(out.find(R"(before [["cleanup.policy","delete",true,true],["retention.bytes","-1",true,false],)"
                 R"(["retention.ms","-1",true,false],["segment.bytes","1073741824",true,false]])")
        != std::string::npos);
  CHECK(out.find(R"(after [["retention.ms","600000",false]])") != std::string::npos);
  CHECK(out.find("shrink refused INVALID_PARTITIONS") != std::string::npos);
  CHECK(out.find("unknown refused INVALID_CONFIG") != std::string::npos);
  CHECK(out.find("one broker refused INVALID_CONFIG") != std::string::npos);  // num.partitions is cluster-wide

  // The cluster default (resource name "", which Kafka's own admin client
  // sends and librdkafka and kafkajs refuse to) is a `config` entry.
  kafka::alter_configs_request defaults;
  defaults.resources = {{kafka::config_resource::broker, "", {{"num.partitions", std::string("3")}}}};
  auto raw = raw_exchange(c.kafka(1), request_frame(defaults, 1), 5s);
  REQUIRE(raw.size() > 8);
  auto altered = kafka::decode_body<kafka::alter_configs_response>(raw.substr(8), 1);
  REQUIRE(altered.ok());
  REQUIRE(altered->responses.size() == 1);
  CHECK(altered->responses[0].error_code == 0);
  for (size_t i = 0; i < 3; ++i) {
    INFO(c.id(i));
    CHECK(wait_until([&] { return count_on(i, "kadm") == 4; }, 10s));
    CHECK(wait_until([&] { return catalogue(i, "kadm")["retention.bytes"] == 2048; }, 10s));
    CHECK(catalogue(i, "kadm")["segment.bytes"] == 1024);
  }

  // The partitions enforce it: segments of about one batch, and the oldest
  // go once more than 2048 bytes are behind the active one.
  std::string value(600, 'r');
  for (int n = 0; n < 12; ++n)
    REQUIRE(call(c.client(0), "POST", "/v1/topics/kadm/records",
                 json{{"records", json::array({json{{"value", value}, {"partition", 0}}})}}.dump())
              .status == 200);
  auto log_start = [&] {
    auto a = call(c.client(0), "GET", "/v1/topics/kadm/partitions/0/records?max_records=1");
    return a.status == 200 ? a.body["log_start_offset"].get<int64_t>() : -1;
  };
  CHECK(wait_until([&] { return log_start() >= 6; }, 10s));

  // librdkafka 2.0.2 (python3-confluent-kafka): grow to 6 at b3, replace
  // the config (AlterConfigs is not incremental: retention.ms and the rest
  // return to their defaults), describe at b3, and the cluster default
  // num.partitions kafkajs altered through b2 (a `config` entry).
  std::string py = "from confluent_kafka.admin import AdminClient, NewPartitions, ConfigResource\n"
                   "a = AdminClient({'bootstrap.servers': '" + addr(2) + "'})\n"
                   "a.create_partitions([NewPartitions('kadm', 6)], request_timeout=20)['kadm'].result()\n"
                   "r = ConfigResource('topic', 'kadm', set_config={'retention.ms': '86400000'})\n"
                   "a.alter_configs([r], request_timeout=20)[r].result()\n"
                   "d = ConfigResource('topic', 'kadm')\n"
                   "for e in sorted(a.describe_configs([d], request_timeout=20)[d].result().values(), "
                   "key=lambda e: e.name):\n"
                   "    print('topic', e.name, e.value, e.is_default, e.source)\n"
                   "b = ConfigResource('broker', '1')\n"
                   "for e in sorted(a.describe_configs([b], request_timeout=20)[b].result().values(), "
                   "key=lambda e: e.name):\n"
                   "    print('broker', e.name, e.value)\n";
  auto [prc, pout] = python_script(c.data_dir(2), "admin_configs.py", py);
  INFO("confluent-kafka: " << pout);
  CHECK(prc == 0);
  CHECK(pout.find("topic retention.ms 86400000 False 1") != std::string::npos);  // DYNAMIC_TOPIC_CONFIG
  CHECK(pout.find("topic retention.bytes -1 True 5") != std::string::npos);      // DEFAULT_CONFIG
  CHECK(pout.find("topic segment.bytes 1073741824 True 5") != std::string::npos);
  CHECK(pout.find("broker num.partitions 3") != std::string::npos);  // the cluster default kafkajs set
  for (size_t i = 0; i < 3; ++i) {
    INFO(c.id(i));
    CHECK(wait_until([&] { return count_on(i, "kadm") == 6; }, 10s));
    CHECK(wait_until([&] { return catalogue(i, "kadm")["retention.ms"] == 86400000; }, 10s));
    CHECK(catalogue(i, "kadm")["retention.bytes"] == -1);
  }

  // Over HTTP at b3: the description gathers every partition's bounds from
  // its owner (b1's over the cluster listener), and a PATCH merges into the
  // config (null = default again).
  auto d = call(c.client(2), "GET", "/v1/topics/kadm");
  REQUIRE(d.status == 200);
  INFO(d.raw);
  REQUIRE(d.body["partitions"].size() == 6);
  for (size_t p = 0; p < 6; ++p) {
    // b1 created the first two; a growth's go to the broker that proposed
    // it (the clients send CreatePartitions to the controller).
    auto owner = d.body["partitions"][p]["owner"];
    CHECK((p < 2 ? owner == "b1" : (owner == "b1" || owner == "b2" || owner == "b3")));
    CHECK(d.body["partitions"][p].contains("log_end_offset"));
  }
  CHECK(d.body["partitions"][0]["log_end_offset"] == 12);
  CHECK(d.body["partitions"][0]["log_start_offset"].get<int64_t>() >= 6);
  CHECK(d.body["size_bytes"].get<int64_t>() > 0);
  CHECK(d.body["config"][2] == json{{"name", "retention.ms"}, {"value", "86400000"}, {"default", false},
                                     {"source", "topic"}, {"read_only", false}});
  auto patched = call(c.client(2), "PATCH", "/v1/topics/kadm/config",
                      json{{"retention.ms", nullptr}, {"retention.bytes", "4096"}}.dump());
  CHECK(patched.status == 200);
  CHECK(patched.body["config"] == json{{"retention.bytes", 4096}});
  auto bad = call(c.client(2), "PATCH", "/v1/topics/kadm/config", json{{"retention.ms", "soon"}}.dump());
  CHECK(bad.status == 400);
  CHECK(bad.raw.find("config.retention.ms: expected an integer") != std::string::npos);
  CHECK(call(c.client(2), "GET", "/v1/topics/never").status == 404);
  CHECK(call(c.client(2), "PATCH", "/v1/topics/never/config", "{}").status == 404);
  for (size_t i = 0; i < 3; ++i) {
    INFO(c.id(i));
    CHECK(wait_until([&] { return catalogue(i, "kadm")["retention.bytes"] == 4096; }, 10s));
    CHECK(catalogue(i, "kadm")["retention.ms"] == -1);
  }
}

TEST_CASE("kafka listener with the metadata log: CreateTopics replica assignments name each partition's owner",
          "[kafka_cluster][metadata]") {
  // docs/kafka.md CreateTopics: the first broker of each partition's list
  // owns it (one copy per partition), named in the topic entry as a placed
  // create (docs/metadata.md "Placing a new topic's partitions"), once every
  // broker has announced it reads such entries. Node ids: b1 1, b2 2, b3 3.
  move_cluster c({"b1", "b2", "b3"}, kafka_raft({"Placement.HeartbeatMs=300"}));
  start_three(c);
  REQUIRE(raft_leader(c));
  auto addr = [&](size_t i) { return "127.0.0.1:" + std::to_string(c.kafka(i)); };
  REQUIRE(wait_until([&] { return placement_checks::topic_placement_state(c.admin(0)).value("readable", false); },
                     20s));
  const std::string py =
    "from confluent_kafka.admin import AdminClient, NewTopic\n"
    "a = AdminClient({'bootstrap.servers': '" + addr(0) + "'})\n"
    "fs = a.create_topics([NewTopic('ra3', 3, replica_assignment=[[3], [1, 2], [2]]),\n"
    "                      NewTopic('rbad', 1, replica_assignment=[[7]])], request_timeout=20)\n"
    "fs['ra3'].result()\n"
    "print('created')\n"
    "try:\n"
    "    fs['rbad'].result()\n"
    "    print('rbad created')\n"
    "except Exception as e:\n"
    "    print('rbad refused', e.args[0].code(), e.args[0].str())\n";
  auto [rc, out] = python_script(c.data_dir(0), "assign.py", py);
  INFO("confluent-kafka create_topics: " << out);
  REQUIRE(rc == 0);
  CHECK(out.find("created\n") != std::string::npos);
  CHECK(out.find("rbad refused 39") != std::string::npos);  // INVALID_REPLICA_ASSIGNMENT
  CHECK(out.find("node id 7") != std::string::npos);
  std::map<int, std::string> expected{{0, "b3"}, {1, "b1"}, {2, "b2"}};
  for (size_t i = 0; i < 3; ++i) {
    INFO(c.id(i));
    CHECK(placement_checks::image_owners(c.admin(i), "ra3", 3) == expected);
  }
  // kcat produces to each partition through b1 and reads it back.
  for (int p = 0; p < 3; ++p) {
    auto [prc, ptext] = sh("echo v" + std::to_string(p) + " | timeout 30 kcat -b " + addr(0) + " -P -t ra3 -p "
                           + std::to_string(p) + " -X message.timeout.ms=20000 2>&1");
    INFO("produce to ra3-" << p << ": " << ptext);
    REQUIRE(prc == 0);
    auto [crc, ctext] = sh("timeout 30 kcat -b " + addr(1) + " -C -t ra3 -p " + std::to_string(p)
                           + " -o beginning -e -q 2>&1");
    INFO("consume ra3-" << p << ": " << ctext);
    CHECK(ctext.find("v" + std::to_string(p)) != std::string::npos);
  }
}
