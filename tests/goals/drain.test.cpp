// The drain phase of the detector (docs/balancer.md "Drain"): every
// partition of a draining broker moves off before any goal runs, to the
// least-loaded broker that hard goals accept; nothing moves onto a draining
// broker; in-flight and internal partitions stay; the action cap holds.

#include <catch2/catch.hpp>

#include <map>
#include <nlohmann/json.hpp>

#include "goals/builtin_goals.hpp"
#include "goals/detector.hpp"
#include "goals/model_json.hpp"
#include "tests/goals/model_builder.hpp"

using namespace moonmq::goals;
using moonmq::test::broker;
using moonmq::test::replica;

namespace {

plan plan_of(const cluster_model& m) {
  static const auto builtin = make_builtin_goals();
  std::vector<const goal*> ptrs;
  for (const auto& g : builtin) ptrs.push_back(g.get());
  auto p = make_plan(m, ptrs);
  REQUIRE(p.ok());
  return p.value();
}

broker_spec draining(std::string id) {
  auto b = broker(std::move(id));
  b.draining = true;
  return b;
}

std::map<std::string, int> owners_after(const cluster_model& m, const plan& p) {
  std::map<std::string, std::string> owner;
  for (const auto& r : m.replicas) owner[r.topic + "-" + std::to_string(r.partition)] = r.owner;
  for (const auto& f : m.in_flight) owner[f.tp.topic + "-" + std::to_string(f.tp.partition)] = f.to;
  for (const auto& a : p.actions) owner[a.topic + "-" + std::to_string(a.partition)] = a.to;
  std::map<std::string, int> count;
  for (const auto& [tp, b] : owner) ++count[b];
  return count;
}

}  // namespace

TEST_CASE("a draining broker is emptied, evenly, before the goals run", "[goals][drain]") {
  cluster_model m;
  m.brokers = {broker("b1"), broker("b2"), draining("b3")};
  for (int p = 0; p < 6; ++p) m.replicas.push_back(replica("t", p, "b3", 100.0));
  m.replicas.push_back(replica("u", 0, "b1", 100.0));
  auto p = plan_of(m);
  REQUIRE(p.drain);
  CHECK(p.drain->brokers == std::vector<std::string>{"b3"});
  CHECK(p.drain->moved == 6);
  CHECK(p.drain->left == 0);
  auto count = owners_after(m, p);
  CHECK(count["b3"] == 0);
  // Fewest partitions first: b2 (0) takes the first, then they alternate.
  CHECK(count["b1"] + count["b2"] == 7);
  CHECK(std::abs(count["b1"] - count["b2"]) <= 1);
  for (const auto& a : p.actions) {
    CHECK(a.to != "b3");
    // Every move off the draining broker is a drain move, even one a goal
    // carried on (the loop makes drain moves whatever DryRun says).
    if (a.from == "b3") CHECK(a.goal == "drain");
  }
  CHECK(p.summary.find("draining 1 broker") != std::string::npos);
}

TEST_CASE("drain ignores cooldown, excluded topics and incomplete windows, but not in-flight or internal partitions",
          "[goals][drain]") {
  cluster_model m;
  auto warm = broker("b2");
  warm.warming = true;  // a destination for the drain, not for goals
  m.brokers = {broker("b1"), warm, draining("b3")};
  m.replicas = {replica("t", 0, "b3"), replica("t", 1, "b3"), replica("x", 0, "b3"), replica("__groups", 0, "b3"),
                replica("t", 2, "b3")};
  m.replicas[1].trusted = false;
  m.excluded_topics = {"x"};
  m.cooldown = {{"t", 0}};
  m.in_flight = {moonmq::test::moving("t", 2, "b1")};
  auto p = plan_of(m);
  REQUIRE(p.drain);
  CHECK(p.drain->moved == 3);  // t-0 (cooldown), t-1 (untrusted), x-0 (excluded topic)
  CHECK(p.drain->left == 1);   // __groups-0: internal
  CHECK(p.drain->explanation.find("internal") != std::string::npos);
  auto count = owners_after(m, p);
  CHECK(count["b3"] == 1);
}

TEST_CASE("nothing moves onto a draining broker, and the action cap bounds a drain", "[goals][drain]") {
  cluster_model m;
  m.brokers = {broker("b1"), draining("b2")};
  for (int p = 0; p < 10; ++p) m.replicas.push_back(replica("t", p, "b2"));
  for (int p = 0; p < 10; ++p) m.replicas.push_back(replica("u", p, "b1"));
  m.max_actions = 4;
  auto p = plan_of(m);
  REQUIRE(p.drain);
  CHECK(p.drain->moved == 4);
  CHECK(p.drain->left == 6);
  CHECK(p.drain->explanation.find("MaxActionsPerDetect") != std::string::npos);
  CHECK(p.actions.size() == 4);
  for (const auto& a : p.actions) {
    CHECK(a.from == "b2");
    CHECK(a.to == "b1");
    CHECK(a.goal == "drain");
  }
}

TEST_CASE("drain respects hard goals: a broker over its capacity takes nothing", "[goals][drain]") {
  cluster_model m;
  auto small = broker("b1");
  small.capacity[0] = 150.0;  // NW_IN capacity: 50 + 100 would pass 0.8 x 150
  m.brokers = {small, broker("b2"), draining("b3")};
  m.brokers[1].capacity[0] = 10000.0;
  m.brokers[2].capacity[0] = 10000.0;
  m.replicas = {replica("u", 0, "b1", 50.0), replica("t", 0, "b3", 100.0), replica("t", 1, "b3", 100.0)};
  auto p = plan_of(m);
  REQUIRE(p.drain);
  CHECK(p.drain->moved == 2);
  for (const auto& a : p.actions) CHECK(a.to == "b2");

  // With no destination under capacity, the drain says so and leaves them.
  m.brokers[1].capacity[0] = 150.0;
  m.replicas.push_back(replica("t", 3, "b2", 100.0));
  auto q = plan_of(m);
  REQUIRE(q.drain);
  CHECK(q.drain->moved == 0);
  CHECK(q.drain->left == 2);
  CHECK(q.drain->explanation.find("hard goal") != std::string::npos);
}

TEST_CASE("a drain avoids a partition's avoided targets while another one takes it, and uses them as the last "
          "resort",
          "[goals][drain][churn]") {
  cluster_model m;
  m.brokers = {broker("b1"), broker("b2"), draining("b3")};
  for (int p = 0; p < 4; ++p) m.replicas.push_back(replica("t", p, "b3", 100.0));
  for (int p = 0; p < 3; ++p) m.avoid.push_back(moonmq::test::avoid("t", p, "b1"));
  auto p = plan_of(m);
  REQUIRE(p.drain);
  CHECK(p.drain->moved == 4);
  CHECK(p.drain->left == 0);
  for (const auto& a : p.actions)
    if (a.partition < 3) CHECK(a.to == "b2");  // b2 fills up, yet b1 is never chosen for them
  CHECK(p.drain->explanation.find("recently left") == std::string::npos);

  // The only other target avoided: the drain still ends, and says so.
  m.brokers = {broker("b1"), draining("b3")};
  p = plan_of(m);
  REQUIRE(p.drain);
  CHECK(p.drain->moved == 4);
  CHECK(p.drain->left == 0);
  CHECK(p.drain->explanation.find("3 go to a broker they recently left or failed to reach") != std::string::npos);
}

TEST_CASE("the plan JSON carries the drain and the model JSON reads draining and warming", "[goals][drain][json]") {
  auto m = model_from_json(nlohmann::json::parse(R"({
    "brokers": [{"id":"b1"}, {"id":"b2","warming":true}, {"id":"b3","draining":true}],
    "partitions": [{"topic":"t","partition":0,"owner":"b3"}]
  })"));
  REQUIRE(m.ok());
  CHECK(m.value().brokers[1].warming);
  CHECK(m.value().brokers[2].draining);
  auto j = plan_to_json(plan_of(m.value()));
  REQUIRE(j.contains("drain"));
  CHECK(j["drain"]["brokers"] == nlohmann::json::array({"b3"}));
  CHECK(j["drain"]["moved"] == 1);
  CHECK(j["actions"][0]["goal"] == "drain");
  auto back = model_to_json(m.value());
  CHECK(back["brokers"][2]["draining"] == true);
  CHECK_FALSE(model_from_json(nlohmann::json::parse(R"({"brokers":[{"id":"b1","draining":1}],"partitions":[]})")).ok());
  // No draining broker: no drain section.
  auto plain = model_from_json(nlohmann::json::parse(R"({"brokers":[{"id":"b1"}],"partitions":[]})"));
  REQUIRE(plain.ok());
  CHECK_FALSE(plan_to_json(plan_of(plain.value())).contains("drain"));
}
