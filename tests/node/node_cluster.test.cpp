#include <catch2/catch.hpp>

#include <csignal>

#include <boost/asio.hpp>
#include <nlohmann/json.hpp>

#include "tests/node/node_harness.hpp"
#include "tests/support/ports.hpp"
#include "transport/blocking_client.hpp"

using namespace moonmq::test;
using moonmq::transport::http_call;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

std::vector<std::string> member(const std::string& id, uint16_t port, const std::string& peer, uint16_t peer_port) {
  return {"Cluster.BrokerId=" + id, "Cluster.Port=" + std::to_string(port), "Cluster.Token=tok",
          "Cluster.PeerTimeout=1",
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

}  // namespace

TEST_CASE("GET /admin/cluster shows every broker with its liveness and the partition owners", "[node][cluster]") {
  temp_dir d1, d2;
  auto p1 = reserve_port(), p2 = reserve_port();
  node_process b1{d1, member("b1", p1, "b2", p2)};
  node_process b2{d2, member("b2", p2, "b1", p1)};
  auto admin1 = b1.wait_ready();
  REQUIRE(admin1);
  REQUIRE(b2.wait_ready());
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
  CHECK(cluster["controller"]["epoch"] == 0);
  CHECK(cluster["controller"]["id"].is_null());

  // A dead peer is reported, not waited for.
  b2.process().signal(SIGKILL);
  b2.process().wait(5s);
  auto t0 = std::chrono::steady_clock::now();
  brokers = brokers_of(*admin1);
  CHECK(std::chrono::steady_clock::now() - t0 < 4s);
  CHECK(brokers["b2"]["alive"] == false);
  CHECK(brokers["b2"].contains("error"));

  // A controller that announced itself shows up.
  auto claim = http_call(p1, "POST", "/cluster/controller", {},
                         {{"X-Cluster-Token", "tok"}, {"X-Controller-Epoch", "3"}, {"X-Controller-Id", "b2"}});
  REQUIRE(claim.status == 200);
  cluster = json::parse(http_call(*admin1, "GET", "/admin/cluster").body);
  CHECK(cluster["controller"]["epoch"] == 3);
  CHECK(cluster["controller"]["id"] == "b2");
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
                       "Port=" + std::to_string(c1), "Cluster.PeerTimeout=1", peer_of("b2", p2, c2)}};
  node_process b2{d2, {"Cluster.BrokerId=b2", "Cluster.Port=" + std::to_string(p2), "Cluster.Token=tok",
                       "Port=" + std::to_string(c2), peer_of("b1", p1, c1)}};
  REQUIRE(b1.wait_ready());
  REQUIRE(b2.wait_ready());
  auto client1 = *b1.client_port();
  for (auto port : {client1, c2})
    REQUIRE(http_call(port, "POST", "/v1/topics", R"({"name":"orders","partitions":2})").status == 201);
  // The controller (here: the test, as b1 at epoch 1) gives orders/1 to b2.
  auto moved = http_call(p1, "POST", "/cluster/owners", R"({"topic":"orders","partition":1,"owner":"b2"})",
                         {{"X-Cluster-Token", "tok"}, {"X-Controller-Epoch", "1"}, {"X-Controller-Id", "b1"}});
  REQUIRE(moved.status == 200);
  // A move's announcement that names another previous owner than the one
  // b1 sees (b2) is late: refused, nothing changes (the produce below still
  // goes to b2).
  auto late = http_call(p1, "POST", "/cluster/owners", R"({"topic":"orders","partition":1,"owner":"b1","from":"b3"})",
                        {{"X-Cluster-Token", "tok"}, {"X-Controller-Epoch", "1"}, {"X-Controller-Id", "b1"}});
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

TEST_CASE("cluster loads and topic growth propagation and cluster-wide partitions in /admin/cluster", "[node][cluster]") {
  temp_dir d1, d2;
  auto p1 = reserve_port(), p2 = reserve_port();
  node_process b1{d1, member("b1", p1, "b2", p2)};
  node_process b2{d2, member("b2", p2, "b1", p1)};
  auto admin1 = b1.wait_ready();
  REQUIRE(admin1);
  REQUIRE(b2.wait_ready());
  auto c1 = *b1.client_port(), c2 = *b2.client_port();
  const moonmq::transport::header_list token{{"X-Cluster-Token", "tok"}};
  // orders is created on both brokers independently; events only on b2, solo only on b1.
  for (auto port : {c1, c2})
    REQUIRE(http_call(port, "POST", "/v1/topics", R"({"name":"orders","partitions":2})").status == 201);
  REQUIRE(http_call(c2, "POST", "/v1/topics", R"({"name":"events","partitions":1})").status == 201);
  REQUIRE(http_call(c1, "POST", "/v1/topics", R"({"name":"solo","partitions":1})").status == 201);
  REQUIRE(http_call(c2, "POST", "/v1/topics/events/records", R"({"records":[{"value":"x"},{"value":"y"}]})").status
          == 200);

  SECTION("GET /cluster/loads needs the token and lists every local partition with bounds and counters") {
    CHECK(http_call(p2, "GET", "/cluster/loads").status == 401);
    CHECK(http_call(p2, "GET", "/cluster/loads", {}, {{"X-Cluster-Token", "wrong"}}).status == 401);
    auto res = http_call(p2, "GET", "/cluster/loads", {}, token);
    REQUIRE(res.status == 200);
    auto loads = json::parse(res.body);
    CHECK(loads["broker_id"] == "b2");
    REQUIRE(loads["partitions"].size() == 3);
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
    CHECK(loads["topics"] == json::parse(R"([{"name":"events","partitions":1},{"name":"orders","partitions":2}])"));
  }

  SECTION("a topic grown on b1 grows on b2 with the new partitions owned by b1") {
    auto grown = http_call(c1, "POST", "/v1/topics/orders/partitions", R"({"count":4})");
    INFO(grown.body);
    REQUIRE(grown.status == 200);
    auto body = json::parse(grown.body);
    CHECK(body["name"] == "orders");
    CHECK(body["partitions"] == 4);
    CHECK(body["peers"] == json::parse(R"([{"id":"b2","grown":true}])"));
    auto owners = json::parse(http_call(p2, "GET", "/cluster/owners", {}, token).body)["owners"];
    CHECK(owners == json::parse(R"([{"topic":"orders","partition":2,"owner":"b1"},
                                    {"topic":"orders","partition":3,"owner":"b1"}])"));
    auto topics = json::parse(http_call(c2, "GET", "/v1/topics").body)["topics"];
    CHECK(topics[1] == json{{"name", "orders"}, {"partitions", 4}});
    // b2 now forwards produce for the new partitions to b1.
    REQUIRE(http_call(c2, "POST", "/v1/topics/orders/records", R"({"records":[{"value":"v","partition":3}]})").status
            == 200);
    auto on_b1 = json::parse(http_call(c1, "GET", "/v1/topics/orders/partitions/3/records?offset=0").body);
    CHECK(on_b1["records"].size() == 1);

    // A peer without the topic does not grow and reports no error.
    grown = http_call(c1, "POST", "/v1/topics/solo/partitions", R"({"count":2})");
    REQUIRE(grown.status == 200);
    CHECK(json::parse(grown.body)["peers"] == json::parse(R"([{"id":"b2","grown":false}])"));

    // The cluster route itself: not larger → grown false, unknown topic 404, bad body 400.
    auto again = http_call(p2, "POST", "/cluster/topics/orders/grow", R"({"count":3,"owner":"b1"})", token);
    CHECK(again.status == 200);
    CHECK(json::parse(again.body) == json{{"topic", "orders"}, {"partitions", 4}, {"grown", false}});
    CHECK(http_call(p2, "POST", "/cluster/topics/nope/grow", R"({"count":3,"owner":"b1"})", token).status == 404);
    CHECK(http_call(p2, "POST", "/cluster/topics/orders/grow", R"({"count":5})", token).status == 400);
    CHECK(http_call(p2, "POST", "/cluster/topics/orders/grow", R"({"count":5,"owner":"b1"})").status == 401);
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
    CHECK(events["holders"] == json::array({"b2"}));
    CHECK(events["local"] == false);
    CHECK(events["log_end_offset"] == 2);
    CHECK_FALSE(events.contains("conflict"));
    CHECK(parts["solo/0"]["owner"] == "b1");
    CHECK(parts["solo/0"]["local"] == true);
    // orders was created on each broker on its own: both claim it.
    CHECK(parts["orders/1"]["owner"] == "b1");
    CHECK(parts["orders/1"]["holders"] == json::array({"b1", "b2"}));
    CHECK(parts["orders/1"]["conflict"] == true);
    auto brokers = brokers_of(*admin1);
    CHECK(brokers["b2"]["alive"] == true);
  }
  b1.process().signal(SIGTERM);
  b2.process().signal(SIGTERM);
  CHECK(b1.process().wait(5s) == 0);
  CHECK(b2.process().wait(5s) == 0);
}
