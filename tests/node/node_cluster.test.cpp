#include <catch2/catch.hpp>

#include <algorithm>
#include <csignal>

#include <boost/asio.hpp>
#include <nlohmann/json.hpp>

#include "cluster/forwarded_produce.hpp"
#include "storage/record_batch.hpp"
#include "tests/node/node_harness.hpp"
#include "tests/support/ports.hpp"
#include "net/blocking_client.hpp"

using namespace moonmq::test;
using moonmq::transport::http_call;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

std::vector<std::string> member(const std::string& id, uint16_t port, const std::string& peer, uint16_t peer_port) {
  return {"Cluster.BrokerId=" + id, "Cluster.Port=" + std::to_string(port), "Cluster.Token=tok",
          "Cluster.PeerTimeout=1", "Cluster.TopicPlacement=proposer",
          "Cluster.Peers=[{\"Id\":\"" + peer + "\",\"Address\":\"127.0.0.1:" + std::to_string(peer_port) + "\"}]"};
}

std::map<std::string, json> brokers_of(uint16_t admin) {
  auto res = http_call(admin, "GET", "/admin/cluster");
  INFO(res.body);
  REQUIRE(res.status == 200);
  std::map<std::string, json> out;
  auto body = json::parse(res.body);
  for (auto& b : body["brokers"])
    out[b["id"].get<std::string>()] = b;
  return out;
}

/// The Raft controller as `admin` sees it once one is elected: (term, id).
std::pair<int64_t, std::string> controller_of(uint16_t admin) {
  json controller;
  bool known = wait_until(
    [&] {
      auto res = http_call(admin, "GET", "/admin/cluster");
      controller = json::parse(res.body, nullptr, false)["controller"];
      return res.status == 200 && controller["id"].is_string();
    },
    10s);
  INFO(controller.dump());
  REQUIRE(known);
  return {controller["epoch"].get<int64_t>(), controller["id"].get<std::string>()};
}

/// X-Cluster-Token and the controller headers of the current Raft leader.
moonmq::transport::header_list as_controller(uint16_t admin) {
  auto [term, id] = controller_of(admin);
  return {{"X-Cluster-Token", "tok"}, {"X-Controller-Epoch", std::to_string(term)}, {"X-Controller-Id", id}};
}

}  // namespace

TEST_CASE("GET /admin/cluster shows every broker with its liveness and the partition owners", "[node][cluster]") {
  temp_dir d1, d2;
  auto p1 = reserve_port(), p2 = reserve_port();
  node_process b1{d1, member("b1", p1, "b2", p2)};
  node_process b2{d2, member("b2", p2, "b1", p1)};
  auto admin1 = b1.wait_ready();
  REQUIRE(admin1);
  REQUIRE(b2.wait_ready());
  controller_of(*admin1);  // two voters elect a leader before the first create (a split vote may take a few rounds)
  REQUIRE(b1.client_port());
  auto created = http_call(*b1.client_port(), "POST", "/v1/topics", R"({"name":"orders","partitions":2})");
  REQUIRE(created.status == 201);

  auto brokers = brokers_of(*admin1);
  REQUIRE(brokers.size() == 2);
  CHECK(brokers["b1"]["client_address"] == "127.0.0.1:" + std::to_string(*b1.client_port()));
  CHECK(brokers["b1"]["alive"] == true);
  CHECK(brokers["b1"]["self"] == true);
  CHECK(brokers["b2"]["alive"] == true);
  auto cluster = json::parse(http_call(*admin1, "GET", "/admin/cluster").body);
  REQUIRE(cluster["partitions"].size() == 2);
  CHECK(cluster["partitions"][0]["owner"] == "b1");
  // The controller is the Raft leader, at its term.
  auto [term, leader] = controller_of(*admin1);
  CHECK(term >= 1);
  CHECK((leader == "b1" || leader == "b2"));

  // A dead peer is reported, not waited for.
  b2.process().signal(SIGKILL);
  b2.process().wait(5s);
  auto t0 = std::chrono::steady_clock::now();
  brokers = brokers_of(*admin1);
  CHECK(std::chrono::steady_clock::now() - t0 < 4s);
  CHECK(brokers["b2"]["alive"] == false);
  CHECK(brokers["b2"].contains("error"));
  b1.process().signal(SIGTERM);
  CHECK(b1.process().wait(5s) == 0);
}

TEST_CASE("GET /admin/cluster on a single broker lists it alone as owner of every partition", "[node][cluster]") {
  temp_dir dir;
  node_process node{dir};
  auto admin = node.wait_ready();
  REQUIRE(admin);
  REQUIRE(http_call(*node.client_port(), "POST", "/v1/topics", R"({"name":"t","partitions":1})").status == 201);
  auto cluster = json::parse(http_call(*admin, "GET", "/admin/cluster").body);
  REQUIRE(cluster["brokers"].size() == 1);
  CHECK(cluster["brokers"][0]["id"] == "local");
  CHECK(cluster["partitions"][0]["owner"] == "local");
  node.process().signal(SIGTERM);
  CHECK(node.process().wait(5s) == 0);
}

TEST_CASE("produce for a partition owned elsewhere is forwarded and fetch answers 421 and commits reach the owner",
          "[node][cluster]") {
  temp_dir d1, d2;
  auto p1 = reserve_port(), p2 = reserve_port(), c1 = reserve_port(), c2 = reserve_port();
  auto peer_of = [](const std::string& id, uint16_t port, uint16_t client) {
    return "Cluster.Peers=[{\"Id\":\"" + id + "\",\"Address\":\"127.0.0.1:" + std::to_string(port)
           + "\",\"ClientAddress\":\"127.0.0.1:" + std::to_string(client) + "\"}]";
  };
  node_process b1{d1, {"Cluster.BrokerId=b1", "Cluster.Port=" + std::to_string(p1), "Cluster.Token=tok",
                       "Cluster.TopicPlacement=proposer",
                       "Port=" + std::to_string(c1), "Cluster.PeerTimeout=1", peer_of("b2", p2, c2)}};
  node_process b2{d2, {"Cluster.BrokerId=b2", "Cluster.Port=" + std::to_string(p2), "Cluster.Token=tok",
                       "Cluster.TopicPlacement=proposer",
                       "Port=" + std::to_string(c2), peer_of("b1", p1, c1)}};
  auto admin1 = b1.wait_ready();
  REQUIRE(admin1);
  REQUIRE(b2.wait_ready());
  controller_of(*admin1);  // two voters elect a leader before the first create (a split vote may take a few rounds)
  auto client1 = *b1.client_port();
  // Created once, through b1: the topic exists on both once its entry applies.
  REQUIRE(http_call(client1, "POST", "/v1/topics", R"({"name":"orders","partitions":2})").status == 201);
  CHECK(http_call(c2, "POST", "/v1/topics", R"({"name":"orders","partitions":2})").status == 200);
  // The controller (here: the test, with the Raft leader's term and id)
  // gives orders/1 to b2 through the metadata log.
  auto controller = as_controller(*admin1);
  auto moved = http_call(p1, "POST", "/cluster/owners", R"({"topic":"orders","partition":1,"owner":"b2"})", controller);
  INFO(moved.body);
  REQUIRE(moved.status == 200);
  // A move's announcement that names another previous owner than the one
  // b1 sees (b2) is late: refused, nothing changes (the produce below still
  // goes to b2).
  auto late = http_call(p1, "POST", "/cluster/owners", R"({"topic":"orders","partition":1,"owner":"b1","from":"b3"})",
                        controller);
  CHECK(late.status == 409);
  CHECK(json::parse(late.body, nullptr, false).value("error", "") == "owner_changed");

  // Produce through b1: partition 0 stays on b1, partition 1 goes to b2 and
  // is acknowledged with b2's offsets.
  http_call(c2, "POST", "/v1/topics/orders/records", R"({"records":[{"value":"direct","partition":1}]})");
  auto produced = http_call(client1, "POST", "/v1/topics/orders/records",
                            R"({"records":[{"value":"a","partition":0},{"value":"b","partition":1},)"
                            R"({"value":"c","partition":1}]})");
  REQUIRE(produced.status == 200);
  auto offsets = json::parse(produced.body)["offsets"];
  CHECK(offsets[0] == json{{"partition", 0}, {"offset", 0}});
  CHECK(offsets[1] == json{{"partition", 1}, {"offset", 1}});
  CHECK(offsets[2] == json{{"partition", 1}, {"offset", 2}});
  auto on_b2 = json::parse(http_call(c2, "GET", "/v1/topics/orders/partitions/1/records?offset=0").body);
  REQUIRE(on_b2["records"].size() == 3);
  CHECK(on_b2["records"][1]["value"] == "b");
  CHECK(on_b2["records"][2]["value"] == "c");
  auto on_b1 = json::parse(http_call(client1, "GET", "/v1/topics/orders/partitions/0/records?offset=0").body);
  CHECK(on_b1["records"].size() == 1);

  // The forward itself (cluster/forwarded_produce.hpp): several parts in
  // one request, each answered as its own produce. At b2: orders/1 twice
  // (appended in body order), orders/0 (b1's: 421 naming b1, nothing
  // appended), orders/9 (no such partition).
  auto batch = [](const std::string& value) {
    return moonmq::storage::encode_batch({moonmq::storage::record{std::nullopt, value, {}, 0}}).value();
  };
  std::vector<moonmq::cluster::forwarded_part> parts{{1, batch("d")}, {0, batch("e")}, {1, batch("f")}, {9, batch("g")}};
  auto forwarded = http_call(p2, "POST", "/cluster/topics/orders/records?acks=leader",
                             moonmq::cluster::encode_forwarded_parts(parts), {{"X-Cluster-Token", "tok"}});
  INFO(forwarded.body);
  REQUIRE(forwarded.status == 200);
  std::vector<moonmq::cluster::forwarded_answer> answers;
  REQUIRE(moonmq::cluster::decode_forwarded_answers(forwarded.body, {1, 0, 1, 9}, answers).empty());
  CHECK(answers[0].status == 200);
  CHECK(answers[0].base_offset == 3);
  CHECK(answers[1].status == 421);
  CHECK(answers[1].error == "not_owner");
  CHECK(answers[1].owner == "b1");
  CHECK(answers[2].base_offset == 4);
  CHECK(answers[3].status == 404);
  CHECK(answers[3].error == "unknown_partition");
  on_b2 = json::parse(http_call(c2, "GET", "/v1/topics/orders/partitions/1/records?offset=3").body);
  REQUIRE(on_b2["records"].size() == 2);
  CHECK(on_b2["records"][0]["value"] == "d");
  CHECK(on_b2["records"][1]["value"] == "f");
  CHECK(json::parse(http_call(c2, "GET", "/v1/topics/orders/partitions/0/records?offset=0").body)
          .value("error", "") == "not_owner");
  CHECK(json::parse(http_call(client1, "GET", "/v1/topics/orders/partitions/0/records?offset=0").body)["records"].size()
        == 1);
  // A torn body is refused whole, and nothing of it is appended.
  auto torn = http_call(p2, "POST", "/cluster/topics/orders/records", moonmq::cluster::encode_forwarded_parts(parts).substr(0, 30),
                        {{"X-Cluster-Token", "tok"}});
  CHECK(torn.status == 400);
  CHECK(json::parse(torn.body).value("error", "") == "invalid_request");
  CHECK(json::parse(http_call(c2, "GET", "/v1/topics/orders/partitions/1/records?offset=0").body)["records"].size()
        == 5);

  // Fetch for orders/1 on b1: 421 naming b2 and its client URL.
  auto fetch = http_call(client1, "GET", "/v1/topics/orders/partitions/1/records?offset=0");
  CHECK(fetch.status == 421);
  auto why = json::parse(fetch.body);
  CHECK(why["error"] == "not_owner");
  CHECK(why["owner"] == "b2");
  CHECK(why["url"] == "http://127.0.0.1:" + std::to_string(c2));
  // A commit through b1 is stored by each partition's owner (docs/groups.md
  // "Cluster-wide groups"): orders/1 on b2, orders/0 on b1.
  auto commit = http_call(client1, "POST", "/v1/groups/g/offsets",
                          R"({"offsets":[{"topic":"orders","partition":1,"offset":2},)"
                          R"({"topic":"orders","partition":0,"offset":1}]})");
  CHECK(commit.status == 200);
  auto stored_on_b2 = http_call(p2, "GET", "/cluster/groups/g/offsets?topic=orders", "", {{"X-Cluster-Token", "tok"}});
  INFO(stored_on_b2.body);
  CHECK(stored_on_b2.body.find(R"("partition":1)") != std::string::npos);
  auto read_back = json::parse(http_call(c2, "GET", "/v1/groups/g/offsets?topic=orders").body);
  INFO(read_back.dump());
  CHECK(read_back["offsets"].size() == 2);
  for (const auto& o : read_back["offsets"])
    CHECK(o["offset"] == (o["partition"] == 1 ? 2 : 1));

  // With the owner gone, a forwarded produce fails clearly and nothing is
  // acknowledged.
  b2.process().signal(SIGKILL);
  b2.process().wait(5s);
  auto lost = http_call(client1, "POST", "/v1/topics/orders/records", R"({"records":[{"value":"x","partition":1}]})");
  CHECK(lost.status == 503);
  CHECK(json::parse(lost.body)["error"] == "owner_unreachable");
  b1.process().signal(SIGTERM);
  CHECK(b1.process().wait(5s) == 0);
}

TEST_CASE("cluster loads and topic growth through the metadata log and cluster-wide partitions in /admin/cluster",
          "[node][cluster]") {
  temp_dir d1, d2;
  auto p1 = reserve_port(), p2 = reserve_port();
  node_process b1{d1, member("b1", p1, "b2", p2)};
  node_process b2{d2, member("b2", p2, "b1", p1)};
  auto admin1 = b1.wait_ready();
  REQUIRE(admin1);
  REQUIRE(b2.wait_ready());
  controller_of(*admin1);  // two voters elect a leader before the first create (a split vote may take a few rounds)
  auto c1 = *b1.client_port(), c2 = *b2.client_port();
  const moonmq::transport::header_list token{{"X-Cluster-Token", "tok"}};
  // Each topic is created once, cluster-wide, owned by the broker it was
  // created through: orders and solo by b1, events by b2.
  REQUIRE(http_call(c1, "POST", "/v1/topics", R"({"name":"orders","partitions":2})").status == 201);
  CHECK(http_call(c2, "POST", "/v1/topics", R"({"name":"orders","partitions":2})").status == 200);
  REQUIRE(http_call(c2, "POST", "/v1/topics", R"({"name":"events","partitions":1})").status == 201);
  REQUIRE(http_call(c1, "POST", "/v1/topics", R"({"name":"solo","partitions":1})").status == 201);
  REQUIRE(http_call(c2, "POST", "/v1/topics/events/records", R"({"records":[{"value":"x"},{"value":"y"}]})").status
          == 200);
  // Every broker holds a copy of every partition once the entries applied there.
  auto loads_of = [&](uint16_t port) {
    auto res = http_call(port, "GET", "/cluster/loads", {}, token);
    REQUIRE(res.status == 200);
    return json::parse(res.body);
  };
  REQUIRE(wait_until([&] { return loads_of(p2)["partitions"].size() == 4 && loads_of(p1)["partitions"].size() == 4; },
                     10s));

  SECTION("GET /cluster/loads needs the token and lists every local partition with bounds and counters") {
    CHECK(http_call(p2, "GET", "/cluster/loads").status == 401);
    CHECK(http_call(p2, "GET", "/cluster/loads", {}, {{"X-Cluster-Token", "wrong"}}).status == 401);
    auto loads = loads_of(p2);
    CHECK(loads["broker_id"] == "b2");
    auto events = loads["partitions"][0];
    CHECK(events["topic"] == "events");
    CHECK(events["partition"] == 0);
    CHECK(events["owner"] == "b2");
    CHECK(events["log_start_offset"] == 0);
    CHECK(events["log_end_offset"] == 2);
    CHECK(events["size_bytes"].get<int64_t>() > 0);
    CHECK(events["records_in"] == 2);
    CHECK(events["bytes_in"].get<int64_t>() > 0);
    CHECK(events["records_out"] == 0);
    CHECK(events["bytes_out"] == 0);
    CHECK_FALSE(events.contains("error"));
    for (const auto& p : loads["partitions"])
      CHECK(p["owner"] == (p["topic"] == "events" ? "b2" : "b1"));
    CHECK(loads["topics"] == json::parse(R"([{"name":"events","partitions":1},{"name":"orders","partitions":2},
                                             {"name":"solo","partitions":1}])"));
  }

  SECTION("a topic grown on b1 grows on b2 with the new partitions owned by b1") {
    auto grown = http_call(c1, "POST", "/v1/topics/orders/partitions", R"({"count":4})");
    INFO(grown.body);
    REQUIRE(grown.status == 200);
    auto body = json::parse(grown.body);
    CHECK(body["name"] == "orders");
    CHECK(body["partitions"] == 4);
    REQUIRE(wait_until(
      [&] {
        auto topics = json::parse(http_call(c2, "GET", "/v1/topics").body)["topics"];
        return topics[1] == json{{"name", "orders"}, {"partitions", 4}};
      },
      10s));
    auto owners = json::parse(http_call(p2, "GET", "/cluster/owners", {}, token).body)["owners"];
    for (int p : {2, 3})
      CHECK(std::count(owners.begin(), owners.end(), json{{"topic", "orders"}, {"partition", p}, {"owner", "b1"}}) == 1);
    // b2 forwards produce for the new partitions to b1.
    REQUIRE(http_call(c2, "POST", "/v1/topics/orders/records", R"({"records":[{"value":"v","partition":3}]})").status
            == 200);
    auto on_b1 = json::parse(http_call(c1, "GET", "/v1/topics/orders/partitions/3/records?offset=0").body);
    CHECK(on_b1["records"].size() == 1);
    // Not larger: unchanged; an unknown topic: 404.
    auto same = http_call(c2, "POST", "/v1/topics/orders/partitions", R"({"count":3})");
    CHECK(same.status != 200);
    CHECK(http_call(c2, "POST", "/v1/topics/nope/partitions", R"({"count":3})").status == 404);
  }

  SECTION("/admin/cluster lists every broker's partitions with their owner and holders") {
    auto res = http_call(*admin1, "GET", "/admin/cluster");
    REQUIRE(res.status == 200);
    auto cluster = json::parse(res.body);
    std::map<std::string, json> parts;
    for (auto& p : cluster["partitions"])
      parts[p["topic"].get<std::string>() + "/" + std::to_string(p["partition"].get<int>())] = p;
    REQUIRE(parts.size() == 4);
    auto events = parts["events/0"];
    CHECK(events["owner"] == "b2");
    CHECK(events["holders"] == json::array({"b1", "b2"}));
    CHECK(events["local"] == true);  // b1 holds a copy; b2 owns it
    CHECK(events["log_end_offset"] == 2);
    CHECK(parts["solo/0"]["owner"] == "b1");
    CHECK(parts["solo/0"]["local"] == true);
    CHECK(parts["orders/1"]["owner"] == "b1");
    // The metadata log names one owner: no partition is claimed twice.
    for (const auto& [name, p] : parts) {
      INFO(name << " " << p.dump());
      CHECK_FALSE(p.contains("conflict"));
    }
    auto brokers = brokers_of(*admin1);
    CHECK(brokers["b2"]["alive"] == true);
  }
  b1.process().signal(SIGTERM);
  b2.process().signal(SIGTERM);
  CHECK(b1.process().wait(5s) == 0);
  CHECK(b2.process().wait(5s) == 0);
}
