// The Kafka listener on 3 brokers with the metadata log (docs/metadata.md):
// a topic created through Kafka exists on every broker once its entry
// commits, so kcat bootstrapped at any broker produces to it and consumes
// it, Metadata names the Raft leader as controller, and a group's commits
// and committed offsets work whichever broker coordinates the group (the
// coordinator used to take a topic it did not hold in its ownership table
// for its own and answer OffsetCommit with 3 UNKNOWN_TOPIC_OR_PARTITION).
// Label scenario.

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

/// A group id the cluster's placement gives to broker `id`.
std::string group_coordinated_by(const std::string& id) {
  for (int n = 0;; ++n) {
    auto g = "kmeta-" + std::to_string(n);
    if (cluster::group_coordinator(g, {"b1", "b2", "b3"}) == id)
      return g;
  }
}

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

TEST_CASE("kafka listener with the metadata log: kafkajs and librdkafka list, describe and delete consumer groups "
          "across brokers",
          "[kafka_cluster][metadata]") {
  // ListGroups (16) answers the groups a broker coordinates, so a client
  // asking every broker (kafkajs listGroups, librdkafka's list_groups) sees
  // each group once; DescribeGroups (15) gives state, protocol, members with
  // client id and host; a group nobody joined is Dead; a group whose last
  // member left is Empty and still listed; DeleteGroups (42) removes an
  // empty group's committed offsets from every partition owner; a group
  // with committed offsets only is listed and described Empty.
  move_cluster c({"b1", "b2", "b3"}, kafka_raft());
  start_three(c);
  REQUIRE(raft_leader(c));
  const auto addr = "127.0.0.1:" + std::to_string(c.kafka(0));
  auto [rc, out] = sh("NODE_PATH='" + npm_modules() + "' timeout 60 node " MOONMQ_SOURCE_DIR
                      "/tests/kafka_node/kafkajs_groups_check.js " + addr + " kgroups 2>&1");
  INFO("kafkajs: " << out);
  REQUIRE(rc == 0);
  auto result = json::parse(lines(out).empty() ? std::string("{}") : lines(out).back(), nullptr, false);
  REQUIRE(result.is_object());
  std::map<std::string, int> listed;
  for (const auto& g : result["listed"]) {
    CHECK(g["protocolType"] == "consumer");
    ++listed[g["groupId"].get<std::string>()];
  }
  CHECK(listed["kgroups-a"] == 1);  // once, from its coordinator only
  CHECK(listed["kgroups-b"] == 1);
  CHECK(listed.count("kgroups-none") == 0);
  const auto& described = result["described"];
  REQUIRE(described.size() == 3);
  for (int i = 0; i < 2; ++i) {
    INFO(described[i].dump());
    CHECK(described[i]["errorCode"] == 0);
    CHECK(described[i]["state"] == "Stable");
    CHECK(described[i]["protocolType"] == "consumer");
    CHECK(described[i]["protocol"] == "RoundRobinAssigner");  // kafkajs's default assignor
    REQUIRE(described[i]["members"].size() == 1);
    CHECK(described[i]["members"][0]["clientId"] == "moonmq-groups-check");
    CHECK(described[i]["members"][0]["clientHost"] == "/127.0.0.1");
    CHECK(described[i]["members"][0]["assignmentBytes"].get<int>() > 0);
  }
  CHECK(described[2]["groupId"] == "kgroups-none");
  CHECK(described[2]["state"] == "Dead");
  CHECK(described[2]["members"].empty());
  REQUIRE(result["after_leave"].size() == 1);
  CHECK(result["after_leave"][0]["state"] == "Empty");
  CHECK(result["after_leave"][0]["members"].empty());
  // DeleteGroups: the empty group's offsets go from every owner, the group
  // is Dead after; a group with a member and an unknown group are refused.
  CHECK(result["offsets_before"] == json::parse(R"([{"partition":0,"offset":"1"},{"partition":1,"offset":"2"}])"));
  CHECK(result["deleted"] == json::parse(R"([{"groupId":"kgroups-a","errorCode":0}])"));
  CHECK(result["refused"]["kgroups-b"] == "NON_EMPTY_GROUP");
  CHECK(result["refused"]["kgroups-none"] == "GROUP_ID_NOT_FOUND");
  CHECK(result["offsets_after"] == json::parse(R"([{"partition":0,"offset":"-1"},{"partition":1,"offset":"-1"}])"));
  REQUIRE(result["after_delete"].size() == 1);
  CHECK(result["after_delete"][0]["state"] == "Dead");

  // A group with committed offsets only (a standalone commit over HTTP, kept
  // by the partitions' owners, whichever brokers those are): listed by its
  // coordinator, Empty with protocol type "consumer" and no members, as
  // Kafka shows a group it knows from its offsets topic.
  REQUIRE(call(c.client(2), "POST", "/v1/groups/kgroups-offsets/offsets",
               R"({"offsets":[{"topic":"kgroups","partition":0,"offset":3},{"topic":"kgroups","partition":1,"offset":4}]})")
            .status == 200);
  // librdkafka 2.0.2's list_groups (python3-confluent-kafka): ListGroups then
  // DescribeGroups on every broker.
  std::string py = "from confluent_kafka.admin import AdminClient\n"
                   "a = AdminClient({'bootstrap.servers': '127.0.0.1:" + std::to_string(c.kafka(1)) + "'})\n"
                   "for g in sorted(a.list_groups(timeout=20), key=lambda g: g.id):\n"
                   "    print(g.id, g.state, g.protocol_type, len(g.members), g.error)\n";
  auto [prc, pout] = python_script(c.data_dir(1), "list_groups.py", py);
  INFO("confluent-kafka list_groups: " << pout);
  CHECK(prc == 0);
  CHECK(pout.find("kgroups-a") == std::string::npos);  // deleted above
  CHECK(pout.find("kgroups-b Empty consumer 0 None") != std::string::npos);
  CHECK(pout.find("kgroups-offsets Empty consumer 0 None") != std::string::npos);
  auto offset_only = call(c.client(1), "GET", "/v1/groups/kgroups-offsets");
  INFO(offset_only.raw);
  CHECK(offset_only.status == 200);
  CHECK(offset_only.body["state"] == "Empty");  // as GET /v1/groups and Kafka say
  CHECK(offset_only.body["members"].empty());
  CHECK(offset_only.body["protocol"].is_null());  // no membership protocol: nobody joined
  CHECK_FALSE(offset_only.body.contains("generation"));

  // The same groups over HTTP: Kafka groups are listed and deleted there too.
  auto over_http = call(c.client(2), "GET", "/v1/groups");
  INFO(over_http.raw);
  CHECK(over_http.raw.find("kgroups-a") == std::string::npos);
  bool kafka_b = false;
  for (const auto& g : over_http.body["groups"])
    kafka_b = kafka_b || (g["group"] == "kgroups-b" && g["protocol"] == "kafka" && g["state"] == "Empty");
  CHECK(kafka_b);
  CHECK(call(c.client(0), "GET", "/v1/groups/kgroups-b").body["protocol"] == "kafka");
  CHECK(call(c.client(0), "DELETE", "/v1/groups/kgroups-b").status == 200);
  CHECK(call(c.client(0), "GET", "/v1/groups/kgroups-b").status == 404);
}

TEST_CASE("kafka listener with the metadata log: committed metadata survives the commit split across partition "
          "owners and comes back from OffsetFetch and HTTP",
          "[kafka_cluster][metadata]") {
  // OffsetCommit's metadata string is stored with the offset by each
  // partition's owner and returned by OffsetFetch (and the HTTP API); null
  // is stored as "" (Kafka's NoMetadata); more than 4096 bytes is 12
  // OFFSET_METADATA_TOO_LARGE for that partition only.
  move_cluster c({"b1", "b2", "b3"}, kafka_raft());
  start_three(c);
  REQUIRE(raft_leader(c));
  // A topic's partitions start on the broker that created it: km on b1,
  // kn on b3, so a commit for both at b2 (the group's coordinator) is split
  // between two other owners.
  for (auto [via, name, count] : {std::tuple<size_t, const char*, int>{0, "km", 3}, {2, "kn", 1}}) {
    auto made = call(c.client(via), "POST", "/v1/topics", json{{"name", name}, {"partitions", count}}.dump());
    REQUIRE(made.status == 201);
  }
  std::set<std::string> leaders;
  REQUIRE(wait_until([&] {
    auto [rc, meta] = sh("timeout 20 kcat -b 127.0.0.1:" + std::to_string(c.kafka(0)) + " -L 2>&1");
    leaders.clear();
    bool in_ours = false;
    for (const auto& line : lines(meta)) {
      if (line.find("topic \"") != std::string::npos)
        in_ours = line.find("\"km\"") != std::string::npos || line.find("\"kn\"") != std::string::npos;
      if (auto at = line.find("leader "); in_ours && line.find("partition ") != std::string::npos
                                          && at != std::string::npos)
        leaders.insert(line.substr(at + 7, line.find(',', at) - at - 7));
    }
    return leaders.size() >= 2;
  }, 10s));
  CHECK(leaders.count("2") == 0);  // b2 owns none of them: every part goes to a peer

  const auto group = group_coordinated_by("b2");
  const uint16_t coordinator = c.kafka(1);
  kafka::offset_commit_request commit;
  commit.group_id = group;
  commit.generation_id = -1;  // a standalone commit
  commit.topics = {{"km", {{0, 5, std::string("m0")}, {1, 6, std::nullopt}, {2, 7, std::string(4097, 'x')}}},
                   {"kn", {{0, 3, std::string("on b3")}}}};
  auto answer = raw_exchange(coordinator, request_frame(commit, 5), 2s);
  REQUIRE(answer.size() > 8);
  auto committed = kafka::decode_body<kafka::offset_commit_response>(answer.substr(8), 5);
  REQUIRE(committed.ok());
  REQUIRE(committed->topics.size() == 2);
  REQUIRE(committed->topics[0].partitions.size() == 3);
  REQUIRE(committed->topics[1].partitions.size() == 1);
  CHECK(committed->topics[1].partitions[0].error_code == 0);
  CHECK(committed->topics[0].partitions[0].error_code == 0);
  CHECK(committed->topics[0].partitions[1].error_code == 0);
  CHECK(committed->topics[0].partitions[2].error_code == kafka::error_code::offset_metadata_too_large);

  auto fetch_all = [&] {
    kafka::offset_fetch_request f;
    f.group_id = group;
    f.topics = std::vector<kafka::offset_fetch_topic>{{"km", {0, 1, 2}}, {"kn", {0}}};
    auto raw = raw_exchange(coordinator, request_frame(f, 4), 2s);
    REQUIRE(raw.size() > 8);
    auto r = kafka::decode_body<kafka::offset_fetch_response>(raw.substr(8), 4);
    REQUIRE(r.ok());
    REQUIRE(r->topics.size() == 2);
    REQUIRE(r->topics[0].partitions.size() == 3);
    REQUIRE(r->topics[1].partitions.size() == 1);
    auto out = r->topics[0].partitions;
    out.push_back(r->topics[1].partitions[0]);
    return out;
  };
  auto got = fetch_all();
  CHECK(got[0].committed_offset == 5);
  CHECK(got[0].metadata == std::optional<std::string>("m0"));
  CHECK(got[1].committed_offset == 6);
  CHECK(got[1].metadata == std::optional<std::string>(""));
  CHECK(got[2].committed_offset == -1);  // refused: nothing stored
  CHECK(got[2].metadata == std::optional<std::string>(""));
  CHECK(got[3].committed_offset == 3);
  CHECK(got[3].metadata == std::optional<std::string>("on b3"));

  // The HTTP API reads and writes the same metadata, through any broker.
  auto http = call(c.client(2), "GET", "/v1/groups/" + group + "/offsets");
  INFO(http.raw);
  REQUIRE(http.status == 200);
  std::map<std::string, std::string> meta_of;
  for (const auto& o : http.body["offsets"])
    meta_of[o.value("topic", "") + "/" + std::to_string(o.value("partition", -1))] =
      o.value("metadata", std::string("<absent>"));
  CHECK(meta_of["km/0"] == "m0");
  CHECK(meta_of["km/1"] == "");
  CHECK(meta_of["kn/0"] == "on b3");
  auto put = call(c.client(0), "POST", "/v1/groups/" + group + "/offsets",
                  json{{"offsets", {{{"topic", "km"}, {"partition", 2}, {"offset", 9}, {"metadata", "http"}}}}}.dump());
  INFO(put.raw);
  CHECK(put.status == 200);
  auto big = call(c.client(0), "POST", "/v1/groups/" + group + "/offsets",
                  json{{"offsets", {{{"topic", "km"}, {"partition", 1}, {"offset", 10},
                                     {"metadata", std::string(4097, 'y')}}}}}.dump());
  CHECK(big.status == 400);
  CHECK(big.body.value("error", "") == "offset_metadata_too_large");
  got = fetch_all();
  CHECK(got[1].committed_offset == 6);  // the refused commit changed nothing
  CHECK(got[2].committed_offset == 9);
  CHECK(got[2].metadata == std::optional<std::string>("http"));

  // Metadata that is not UTF-8 is stored with U+FFFD in its place (as
  // Kafka's decoding does), and the broker keeps serving.
  kafka::offset_commit_request odd;
  odd.group_id = group;
  odd.generation_id = -1;
  odd.topics = {{"kn", {{0, 4, std::string("bad\xff")}}}};
  auto odd_answer = raw_exchange(coordinator, request_frame(odd, 5), 2s);
  REQUIRE(odd_answer.size() > 8);
  auto odd_committed = kafka::decode_body<kafka::offset_commit_response>(odd_answer.substr(8), 5);
  REQUIRE(odd_committed.ok());
  CHECK(odd_committed->topics[0].partitions[0].error_code == 0);
  got = fetch_all();
  CHECK(got[3].committed_offset == 4);
  CHECK(got[3].metadata == std::optional<std::string>("bad\xef\xbf\xbd"));

  // OffsetDelete (47, KIP-496) on the coordinator: the named partitions'
  // offsets go from every owner; an unknown partition is 3; elsewhere 16;
  // a group nobody knows 69.
  auto offset_delete = [&](uint16_t port, const std::string& g, std::vector<kafka::offset_delete_topic> topics) {
    kafka::offset_delete_request d;
    d.group_id = g;
    d.topics = std::move(topics);
    auto raw = raw_exchange(port, request_frame(d, 0), 5s);
    REQUIRE(raw.size() > 8);
    auto r = kafka::decode_body<kafka::offset_delete_response>(raw.substr(8), 0);
    REQUIRE(r.ok());
    return *r;
  };
  auto deleted = offset_delete(coordinator, group, {{"km", {0, 2, 9}}, {"kn", {0}}});
  CHECK(deleted.error_code == 0);
  REQUIRE(deleted.topics.size() == 2);
  CHECK(deleted.topics[0].partitions[0].error_code == 0);
  CHECK(deleted.topics[0].partitions[1].error_code == 0);
  CHECK(deleted.topics[0].partitions[2].error_code == kafka::error_code::unknown_topic_or_partition);
  CHECK(deleted.topics[1].partitions[0].error_code == 0);
  got = fetch_all();
  CHECK(got[0].committed_offset == -1);
  CHECK(got[1].committed_offset == 6);  // not named: kept
  CHECK(got[2].committed_offset == -1);
  CHECK(got[3].committed_offset == -1);
  CHECK(offset_delete(c.kafka(0), group, {{"km", {1}}}).error_code == kafka::error_code::not_coordinator);
  // Again: the group still exists (km/1's offset), so no 69.
  CHECK(offset_delete(coordinator, group, {{"km", {0, 2}}}).error_code == 0);
  const auto nobody = group_coordinated_by("b2") + "-x";
  const uint16_t nobody_port = c.kafka(cluster::group_coordinator(nobody, {"b1", "b2", "b3"}) == "b1"   ? 0
                                       : cluster::group_coordinator(nobody, {"b1", "b2", "b3"}) == "b2" ? 1
                                                                                                         : 2);
  CHECK(offset_delete(nobody_port, nobody, {{"km", {1}}}).error_code == kafka::error_code::group_id_not_found);
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

TEST_CASE("groups over HTTP: every broker lists a group, describes its members, committed offsets and lag, and "
          "deletes it once empty",
          "[kafka_cluster][metadata]") {
  // GET /v1/groups merges every broker's report; GET /v1/groups/{g} takes
  // the membership from the coordinator, the committed offsets from each
  // partition's owner and the log end offsets from the owners too; DELETE
  // /v1/groups/{g} runs on the coordinator (409 while a member is in it).
  move_cluster c({"b1", "b2", "b3"}, kafka_raft());
  start_three(c);
  REQUIRE(raft_leader(c));
  REQUIRE(call(c.client(0), "POST", "/v1/topics", json{{"name", "glag"}, {"partitions", 2}}.dump()).status == 201);
  for (int p = 0; p < 2; ++p) {
    json records = json::array();
    for (int n = 0; n < (p == 0 ? 10 : 4); ++n)
      records.push_back(json{{"value", "v" + std::to_string(n)}, {"partition", p}});
    REQUIRE(call(c.client(0), "POST", "/v1/topics/glag/records", json{{"records", records}}.dump()).status == 200);
  }
  const auto group = group_coordinated_by("b2");
  auto joined = call(c.client(2), "POST", "/v1/groups/" + group + "/members", json{{"topics", {"glag"}}}.dump());
  REQUIRE(joined.status == 200);
  const auto member = joined.body["member_id"].get<std::string>();
  auto committed = call(c.client(2), "POST", "/v1/groups/" + group + "/offsets",
                        json{{"offsets", {{{"topic", "glag"}, {"partition", 0}, {"offset", 4}},
                                          {{"topic", "glag"}, {"partition", 1}, {"offset", 4}}}},
                             {"member_id", member},
                             {"generation", joined.body["generation"]}}
                          .dump());
  REQUIRE(committed.status == 200);

  auto d = call(c.client(0), "GET", "/v1/groups/" + group);
  INFO(d.raw);
  REQUIRE(d.status == 200);
  CHECK(d.body["coordinator"] == "b2");
  CHECK(d.body["protocol"] == "http");
  CHECK(d.body["state"] == "Stable");
  REQUIRE(d.body["members"].size() == 1);
  CHECK(d.body["members"][0]["member_id"] == member);
  CHECK(d.body["members"][0]["assignment"].size() == 2);
  REQUIRE(d.body["offsets"].size() == 2);
  CHECK(d.body["offsets"][0]["log_end_offset"] == 10);
  CHECK(d.body["offsets"][0]["lag"] == 6);
  CHECK(d.body["offsets"][1]["log_end_offset"] == 4);
  CHECK(d.body["offsets"][1]["lag"] == 0);
  CHECK(d.body["lag"] == 6);
  CHECK(d.body["lag_complete"] == true);

  auto listed = call(c.client(2), "GET", "/v1/groups");
  INFO(listed.raw);
  REQUIRE(listed.status == 200);
  CHECK(listed.body["unreachable"].empty());
  bool found = false;
  for (const auto& g : listed.body["groups"])
    if (g["group"] == group) {
      found = true;
      CHECK(g == json{{"group", group}, {"coordinator", "b2"}, {"protocol", "http"}, {"state", "Stable"},
                      {"members", 1}});
    }
  CHECK(found);

  auto refused = call(c.client(2), "DELETE", "/v1/groups/" + group);
  CHECK(refused.status == 409);
  CHECK(refused.body["error"] == "group_not_empty");
  // A refused deletion deletes nothing anywhere: the offsets live on b1,
  // not on the coordinator b2 that refused.
  auto kept = call(c.client(0), "GET", "/v1/groups/" + group + "/offsets");
  CHECK(kept.status == 200);
  CHECK(kept.body["offsets"].size() == 2);
  REQUIRE(call(c.client(2), "DELETE", "/v1/groups/" + group + "/members/" + member).status == 200);
  auto deleted = call(c.client(2), "DELETE", "/v1/groups/" + group);
  CHECK(deleted.status == 200);
  CHECK(deleted.body == json{{"group", group}, {"deleted", true}});
  CHECK(call(c.client(0), "GET", "/v1/groups/" + group).status == 404);
  CHECK(call(c.client(0), "GET", "/v1/groups/" + group + "/offsets").status == 404);
  CHECK(call(c.client(1), "DELETE", "/v1/groups/" + group).status == 404);
  CHECK(call(c.client(1), "GET", "/v1/groups/bad%20id").status == 400);
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
  {
    std::ofstream f(c.data_dir(0) + "/assign.py");
    f << "from confluent_kafka.admin import AdminClient, NewTopic\n"
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
  }
  auto [rc, out] = sh("timeout 60 /usr/bin/python3 " + c.data_dir(0) + "/assign.py 2>&1");
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
