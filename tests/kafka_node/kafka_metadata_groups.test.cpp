// Consumer groups on 3 brokers with the metadata log (docs/groups.md): a
// group's commits and committed offsets work whichever broker coordinates
// the group, kafkajs and librdkafka list, describe and delete groups on
// every broker, and the HTTP group routes merge every broker's report.
// Label scenario.

#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "cluster/group_placement.hpp"
#include "tests/kafka_node/kafka_client.hpp"
#include "tests/kafka_node/raft_kafka.hpp"
#include "tests/node/move_cluster.hpp"
#include "tests/support/raw_http.hpp"

using namespace moonmq;
using namespace moonmq::test;
using namespace moonmq::test::move;
using namespace std::chrono_literals;

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
