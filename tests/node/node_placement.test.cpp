// Session placement on real moonmq-node processes (issue 8): the load_meter
// of every broker measures its load and pulls its peers' reports, and
// GET /session/recommend on any broker never returns a loaded, killed,
// draining or excluded broker. Heartbeats are 200 ms so that each scenario
// takes a few seconds.

#include <catch2/catch.hpp>

#include <atomic>
#include <csignal>
#include <thread>

#include "tests/node/move_cluster.hpp"
#include "tests/support/ports.hpp"

using namespace moonmq::test;
using namespace moonmq::test::move;
using namespace std::chrono_literals;

namespace {

/// Every broker of these scenarios: fast heartbeats, the process cpu (all
/// brokers share one machine, so the machine figure says nothing).
std::vector<std::string> fast_placement(std::vector<std::string> extra = {}) {
  std::vector<std::string> out{"Placement.HeartbeatMs=200", "Placement.Cpu=process"};
  out.insert(out.end(), extra.begin(), extra.end());
  return out;
}

answer recommend(uint16_t client, const std::string& client_id, const std::string& topic = {}) {
  std::string target = "/session/recommend?clientId=" + client_id;
  if (!topic.empty())
    target += "&topic=" + topic;
  return call(client, "GET", target);
}

/// The ranked and excluded brokers of an answer's details: id → row.
std::map<std::string, json> rows(const json& body, const char* which) {
  std::map<std::string, json> out;
  if (body.is_object() && body.contains("details") && body["details"].contains(which))
    for (const auto& r : body["details"][which])
      out[r["broker_id"].get<std::string>()] = r;
  return out;
}

/// Polls recommend on `client` until `ok(answer)` (every 50 ms, up to
/// `timeout`); returns the last answer.
template <class Pred>
answer wait_recommend(uint16_t client, const std::string& client_id, Pred ok, std::chrono::milliseconds timeout = 10s) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  answer a;
  do {
    a = recommend(client, client_id);
    if (ok(a))
      return a;
    std::this_thread::sleep_for(50ms);
  } while (std::chrono::steady_clock::now() < deadline);
  return a;
}

/// A producer of ~16 KiB requests every 20 ms (≈ 800 KB/s) with a client id.
class load {
public:
  load(uint16_t client, std::string topic, std::string client_id)
    : thread_([this, client, topic, client_id] {
        std::string value(16 * 1024, 'x');
        json body{{"records", json::array({json{{"value", value}}})}};
        auto text = body.dump();
        while (!stop_) {
          auto a = call(client, "POST", "/v1/topics/" + topic + "/records?acks=none&clientId=" + client_id, text);
          if (a.status == 200)
            ++ok_;
          std::this_thread::sleep_for(20ms);
        }
      }) {}
  ~load() {
    stop_ = true;
    thread_.join();
  }
  int ok() const { return ok_.load(); }

private:
  std::atomic<bool> stop_{false};
  std::atomic<int> ok_{0};
  std::thread thread_;
};

/// Starts every broker of `c` at once and waits until each is ready.
void start_all(move_cluster& c, size_t n) {
  for (size_t i = 0; i < n; ++i)
    c.launch(i);
  for (size_t i = 0; i < n; ++i)
    c.wait_ready(i);
}

}  // namespace

TEST_CASE("session placement: a single broker recommends itself and shows its meter", "[node][placement]") {
  temp_dir dir;
  node_process node{dir, fast_placement()};
  auto admin = node.wait_ready();
  REQUIRE(admin);
  auto port = *node.client_port();
  auto a = wait_recommend(port, "c1", [](const answer& x) { return x.status == 200; });
  INFO(a.raw);
  REQUIRE(a.status == 200);
  CHECK(a.body["broker_id"] == "local");
  CHECK(a.body["url"] == "http://127.0.0.1:" + std::to_string(port));
  CHECK(a.body["score"].is_number());
  CHECK(a.body["details"]["outcome"] == "recommended");

  // Bad parameters are 400s naming the parameter.
  auto missing = call(port, "GET", "/session/recommend");
  CHECK(missing.status == 400);
  CHECK(missing.raw.find("clientId") != std::string::npos);
  auto bad_topic = call(port, "GET", "/session/recommend?clientId=c1&topic=a..b");
  CHECK(bad_topic.status == 400);
  CHECK(bad_topic.raw.find("topic") != std::string::npos);
  auto bad_client = call(port, "POST", "/v1/topics", R"({"name":"t","partitions":1})");
  CHECK(bad_client.status == 201);
  auto bad_produce = call(port, "POST", "/v1/topics/t/records", R"({"records":[{"value":"v"}]})",
                          {{"X-Client-Id", std::string(300, 'c')}});
  CHECK(bad_produce.status == 400);
  CHECK(bad_produce.raw.find("clientId") != std::string::npos);

  // A produce with a client id becomes a session in the meter's next report.
  auto produced = call(port, "POST", "/v1/topics/t/records", R"({"records":[{"value":"v"}]})",
                       {{"X-Client-Id", "p1"}});
  REQUIRE(produced.status == 200);
  auto seen = wait_recommend(port, "p1", [](const answer& x) {
    auto r = rows(x.body, "ranked");
    return r.count("local") && r["local"]["client_sessions"] == 1;
  });
  INFO(seen.raw);
  CHECK(rows(seen.body, "ranked")["local"]["client_sessions"] == 1);
  auto with_topic = recommend(port, "p1", "t");
  INFO(with_topic.raw);
  REQUIRE(with_topic.status == 200);
  CHECK(with_topic.body["details"]["topic_partitions"] == 1);
  CHECK(rows(with_topic.body, "ranked")["local"]["owned_partitions"] == 1);

  // /admin/actors lists the meter; its state has the local report, the
  // tracker and the last recommendation.
  auto list = call(*admin, "GET", "/admin/actors");
  REQUIRE(list.status == 200);
  uint64_t id = 0;
  for (const auto& act : list.body["actors"])
    if (act["kind"] == "load_meter")
      id = act["id"].get<uint64_t>();
  REQUIRE(id != 0);
  auto inspected = call(*admin, "GET", "/admin/actors/" + std::to_string(id));
  INFO(inspected.raw);
  REQUIRE(inspected.status == 200);
  const auto& state = inspected.body["state"];
  CHECK(state["local"]["broker_id"] == "local");
  CHECK(state["local"]["active_sessions"].get<int64_t>() >= 1);
  CHECK(state["tracker"].size() == 1);
  CHECK(state["last_recommendation"]["client_id"] == "p1");
  CHECK(state["last_recommendation"]["details"]["ranked"].size() == 1);
}

TEST_CASE("session placement: an excluded single broker answers 503 no_eligible_broker", "[node][placement]") {
  temp_dir dir;
  node_process node{dir, fast_placement({"Autobalance.ExcludedBrokers=[\"local\"]"})};
  REQUIRE(node.wait_ready());
  auto a = wait_recommend(*node.client_port(), "c1", [](const answer& x) { return x.status != 0; });
  INFO(a.raw);
  CHECK(a.status == 503);
  CHECK(a.body["error"] == "no_eligible_broker");
  CHECK(a.body["message"].is_string());
  CHECK(rows(a.body, "excluded")["local"]["reason"] == "draining");
}

TEST_CASE("session placement: a broker under produce load is never recommended", "[node][placement][cluster]") {
  // 300 ms heartbeats: every interval sees several of the loader's requests
  // (≈ 800 kB/s, far above the 20 kB/s overload threshold) even on a busy machine.
  move_cluster c{{"b1", "b2", "b3"},
                 fast_placement({"Placement.HeartbeatMs=300", "Placement.OverloadInflowBytesPerSec=20000"})};
  start_all(c, 3);
  create_topic(c.client(0), "load", 1);
  // The peers' reports travel in GET /cluster/loads.
  auto loads = cluster_call(c.cluster_port(0), "GET", "/cluster/loads");
  REQUIRE(loads.status == 200);
  CHECK(loads.body.contains("session_load"));

  load producer{c.client(0), "load", "loader"};
  // Every broker sees b1 overloaded once its report arrived.
  for (size_t i = 0; i < 3; ++i) {
    auto a = wait_recommend(c.client(i), "probe", [](const answer& x) {
      auto r = rows(x.body, "ranked");
      return r.size() == 3 && r["b1"]["overloaded"] == true;
    });
    INFO("broker " << c.id(i) << ": " << a.raw << "\n" << c.all_logs());
    REQUIRE(rows(a.body, "ranked")["b1"]["overloaded"] == true);
  }
  std::map<std::string, int> chosen;
  for (int round = 0; round < 20; ++round)
    for (size_t i = 0; i < 3; ++i) {
      auto a = recommend(c.client(i), "client-" + std::to_string(round));
      INFO(a.raw);
      REQUIRE(a.status == 200);
      CHECK(a.body["broker_id"] != "b1");
      ++chosen[a.body["broker_id"].get<std::string>()];
      if (round % 5 == 0)
        std::this_thread::sleep_for(100ms);  // spans several heartbeats
    }
  CHECK(producer.ok() > 0);
  CHECK(chosen.count("b1") == 0);
  // The URL is the chosen broker's client API.
  auto a = recommend(c.client(0), "url-check");
  REQUIRE(a.status == 200);
  CHECK((a.body["url"] == c.url(1) || a.body["url"] == c.url(2)));
}

TEST_CASE("session placement: a killed broker is never recommended", "[node][placement][cluster]") {
  move_cluster c{{"b1", "b2", "b3"}, fast_placement()};
  start_all(c, 3);
  for (size_t i = 0; i < 3; ++i) {
    auto a = wait_recommend(c.client(i), "probe", [](const answer& x) { return rows(x.body, "ranked").size() == 3; });
    INFO(a.raw);
    REQUIRE(rows(a.body, "ranked").size() == 3);
  }
  c.kill(2);
  for (size_t i = 0; i < 2; ++i) {
    auto a = wait_recommend(c.client(i), "probe", [](const answer& x) { return rows(x.body, "excluded").count("b3"); });
    INFO(a.raw);
    REQUIRE(rows(a.body, "excluded").count("b3"));
    CHECK(rows(a.body, "excluded")["b3"]["reason"] == "dead");
  }
  for (int round = 0; round < 20; ++round)
    for (size_t i = 0; i < 2; ++i) {
      auto a = recommend(c.client(i), "after-kill-" + std::to_string(round));
      INFO(a.raw);
      REQUIRE(a.status == 200);
      CHECK(a.body["broker_id"] != "b3");
    }
}

TEST_CASE("session placement: with every broker draining or dead recommend answers 503", "[node][placement][cluster]") {
  move_cluster c{{"b1", "b2"}, fast_placement()};
  c.launch(0, {"Placement.Draining=true"});
  c.launch(1);
  c.wait_ready(0);
  c.wait_ready(1);
  // b1 drains: it sends every client to b2 once b2's report arrived.
  auto a = wait_recommend(c.client(0), "c1", [](const answer& x) { return x.status == 200; });
  INFO(a.raw);
  REQUIRE(a.status == 200);
  CHECK(a.body["broker_id"] == "b2");
  CHECK(a.body["url"] == c.url(1));
  CHECK(rows(a.body, "excluded")["b1"]["reason"] == "draining");
  c.kill(1);
  auto none = wait_recommend(c.client(0), "c1", [](const answer& x) { return x.status == 503; });
  INFO(none.raw);
  REQUIRE(none.status == 503);
  CHECK(none.body["error"] == "no_eligible_broker");
  CHECK(rows(none.body, "excluded")["b2"]["reason"] == "dead");
}

TEST_CASE("session placement: a client's second session goes to a broker it does not use yet", "[node][placement][cluster]") {
  move_cluster c{{"b1", "b2", "b3"}, fast_placement()};
  start_all(c, 3);
  create_topic(c.client(1), "orders", 1);
  // c7's first session: a producer on b2.
  auto first = call(c.client(1), "POST", "/v1/topics/orders/records?clientId=c7", R"({"records":[{"value":"v"}]})");
  REQUIRE(first.status == 200);
  for (size_t i = 0; i < 3; ++i) {
    auto a = wait_recommend(c.client(i), "c7", [](const answer& x) {
      auto r = rows(x.body, "ranked");
      return r.size() == 3 && r["b2"]["client_sessions"] == 1;
    });
    INFO(a.raw);
    REQUIRE(rows(a.body, "ranked")["b2"]["client_sessions"] == 1);
  }
  for (int round = 0; round < 10; ++round)
    for (size_t i = 0; i < 3; ++i) {
      auto a = recommend(c.client(i), "c7");
      INFO(a.raw);
      REQUIRE(a.status == 200);
      CHECK(a.body["broker_id"] != "b2");
    }
}
