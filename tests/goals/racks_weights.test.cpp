// Broker weights and racks in the planner (docs/balancer.md "Racks and
// weights"): the distribution goals give each eligible broker a share
// proportional to its weight; a draining broker's partitions stay in its
// rack when they can; a broker that joins is filled from its own rack first.

#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "goals/band.hpp"
#include "goals/detector.hpp"
#include "goals/model_json.hpp"
#include "goals/snapshot.hpp"
#include "tests/goals/model_builder.hpp"

using namespace moonmq::goals;
using moonmq::test::applied;
using moonmq::test::broker;
using moonmq::test::builtin_goals;
using moonmq::test::replica;
using moonmq::test::report_of;

namespace {

broker_spec weighted(std::string id, double weight, std::string rack = {}) {
  auto b = broker(std::move(id));
  b.weight = weight;
  b.rack = std::move(rack);
  return b;
}

plan plan_of(const cluster_model& m) {
  auto p = make_plan(m, builtin_goals());
  REQUIRE(p.ok());
  return p.value();
}

std::map<std::string, int> counts(const cluster_model& m) {
  std::map<std::string, int> out;
  for (const auto& b : m.brokers) out[b.id] = 0;
  for (const auto& r : m.replicas) ++out[r.owner];
  return out;
}

std::map<std::string, double> nw_in(const cluster_model& m) {
  std::map<std::string, double> out;
  for (const auto& r : m.replicas) out[r.owner] += r.load[0];
  return out;
}

std::string rack_of(const cluster_model& m, const std::string& id) {
  for (const auto& b : m.brokers)
    if (b.id == id) return b.rack;
  return "?";
}

}  // namespace

TEST_CASE("partition counts follow broker weights, and the plan says the band is per unit of weight",
          "[goals][weights]") {
  cluster_model m;
  m.brokers = {weighted("b1", 1), weighted("b2", 1), weighted("b3", 2)};
  for (int p = 0; p < 40; ++p) m.replicas.push_back(replica("t", p, "b1"));
  m.max_actions = 1000;
  auto p = plan_of(m);
  const auto* count = report_of(p, "PARTITION_COUNT");
  REQUIRE(count);
  CHECK(count->before.basis == "load_per_weight");
  CHECK(count->before.mean == Approx(10.0));  // 40 partitions over a total weight of 4
  CHECK(count->after.violators.empty());
  auto after = applied(m, p);
  auto c = counts(after);
  // Band [8, 12] per unit of weight: b3 holds 16 to 24, the others 8 to 12.
  CHECK(c["b3"] >= 16);
  CHECK(c["b3"] <= 24);
  CHECK(c["b2"] >= 8);
  CHECK(c["b2"] <= 12);
  CHECK(c["b1"] >= 8);
  CHECK(c["b1"] <= 12);
  REQUIRE(p.count_moves_lower_bound);
  CHECK(*p.count_moves_lower_bound == 28);  // b1 holds 40, at most 12: 28 must leave
  CHECK(plan_of(after).actions.empty());

  // The lower bound counts each broker's limits in partitions: all 40 on
  // b3 (weight 2, at most 24) leave 16 to move, and b1 and b2 lack 8 each.
  for (auto& r : m.replicas) r.owner = "b3";
  auto q = plan_of(m);
  REQUIRE(q.count_moves_lower_bound);
  CHECK(*q.count_moves_lower_bound == 16);
  CHECK(q.actions.size() >= 16);
}

TEST_CASE("with every weight 1 the bands are the unweighted ones", "[goals][weights]") {
  cluster_model m;
  m.brokers = {broker("b1"), broker("b2"), broker("b3")};
  for (int p = 0; p < 4; ++p) m.replicas.push_back(replica("t", p, "b1"));
  auto s = snapshot::freeze(m);
  REQUIRE(s.ok());
  CHECK_FALSE(s.value().weighted());
  CHECK(s.value().eligible_weight_total() == 3.0);
  auto b = make_band(s.value(), resource::partition_count, 0.2, 0.0);
  CHECK(b.mean == Approx(4.0 / 3.0));
  CHECK(b.lower == Approx(1.0));  // floor(mean), below mean·0.8
  CHECK(b.upper == Approx(2.0));  // ceil(mean), above mean·1.2
  CHECK(report_of(plan_of(m), "PARTITION_COUNT")->before.basis == "load");
}

TEST_CASE("each broker's count limits hold a whole number of partitions near its share, and a light broker "
          "widens only its own",
          "[goals][weights]") {
  // b4 weighs 0.05: 30 partitions over a total weight of 3.05 make a mean
  // of 9.84 per unit of weight, band [7.87, 11.8]. b4's share, 0.49
  // partitions, is in no whole number of that band, so b4 alone may hold
  // 0 or 1 (0 to 20 per unit of weight); the others keep [7.87, 11.8]:
  // 8 to 11 partitions. b3 joined empty and must be filled.
  cluster_model m;
  m.brokers = {weighted("b1", 1), weighted("b2", 1), weighted("b3", 1), weighted("b4", 0.05)};
  for (int p = 0; p < 30; ++p) m.replicas.push_back(replica("t", p, p < 15 ? "b1" : "b2"));
  auto s = snapshot::freeze(m);
  REQUIRE(s.ok());
  const auto& snap = s.value();
  auto b = make_band(snap, resource::partition_count, 0.2, 0.0);
  CHECK(b.mean == Approx(30.0 / 3.05));
  CHECK(b.lower_of(snap, broker_index{0}) == Approx(b.mean * 0.8));
  CHECK(b.upper_of(snap, broker_index{0}) == Approx(b.mean * 1.2));
  CHECK(b.lower_of(snap, broker_index{3}) == Approx(0.0));
  CHECK(b.upper_of(snap, broker_index{3}) == Approx(20.0));
  auto p = plan_of(m);
  CHECK(report_of(p, "PARTITION_COUNT")->after.violators.empty());
  auto c = counts(applied(m, p));
  for (const char* id : {"b1", "b2", "b3"}) {
    INFO(id);
    CHECK(c[id] >= 8);
    CHECK(c[id] <= 11);
  }
  CHECK(c["b4"] <= 1);

  // Weights 1 and 2 with 4 partitions: b1 holds 1 or 2, b2 2 or 3.
  cluster_model two;
  two.brokers = {weighted("b1", 1), weighted("b2", 2)};
  for (int k = 0; k < 4; ++k) two.replicas.push_back(replica("t", k, "b1"));
  auto c2 = counts(applied(two, plan_of(two)));
  CHECK(c2["b1"] >= 1);
  CHECK(c2["b1"] <= 2);
  CHECK(c2["b2"] >= 2);
}

TEST_CASE("a draining broker's partitions go to the fewest partitions per unit of weight", "[goals][weights][drain]") {
  // b3 holds more partitions than b2 but fewer per unit of weight (6/3 < 4/1).
  cluster_model m;
  m.brokers = {weighted("b1", 1), weighted("b2", 1), weighted("b3", 3)};
  m.brokers[0].draining = true;
  int n = 0;
  m.replicas.push_back(replica("t", n++, "b1"));
  for (int p = 0; p < 4; ++p) m.replicas.push_back(replica("t", n++, "b2"));
  for (int p = 0; p < 6; ++p) m.replicas.push_back(replica("t", n++, "b3"));
  m.goals["PARTITION_COUNT"].enabled = false;
  auto p = plan_of(m);
  REQUIRE(p.actions.size() == 1);
  CHECK(p.actions[0].to == "b3");
}

TEST_CASE("network load follows broker weights", "[goals][weights]") {
  // Seeded partitions of 0-1 MiB/s NW_IN, all on b1; b2 weighs three times b1.
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> load(0.0, 1048576.0);
  cluster_model m;
  m.brokers = {weighted("b1", 1), weighted("b2", 3)};
  for (int p = 0; p < 200; ++p) m.replicas.push_back(replica("t", p, "b1", load(rng)));
  m.max_actions = 1000;
  m.goals["PARTITION_COUNT"].enabled = false;  // NW_IN alone decides
  auto p = plan_of(m);
  const auto* in = report_of(p, "NW_IN");
  REQUIRE(in);
  CHECK(in->before.basis == "load_per_weight");
  CHECK(in->after.violators.empty());
  auto after = nw_in(applied(m, p));
  const double total = after["b1"] + after["b2"];
  // Shares of 1/4 and 3/4, each within the goal's 20% band.
  CHECK(after["b1"] / (total / 4) == Approx(1.0).margin(0.2));
  CHECK(after["b2"] / (total * 3 / 4) == Approx(1.0).margin(0.2));
}

TEST_CASE("a weight outside [0.01, 100] is refused, and the model JSON keeps it", "[goals][weights]") {
  cluster_model m;
  m.brokers = {weighted("b1", 0.0), broker("b2")};
  auto s = snapshot::freeze(m);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error() == "brokers[0].weight: must be a number in [0.01, 100]");
  m.brokers[0].weight = 101.0;
  CHECK_FALSE(snapshot::freeze(m).ok());
  m.brokers[0].weight = std::nan("");
  CHECK_FALSE(snapshot::freeze(m).ok());

  auto parsed = model_from_json(nlohmann::json::parse(
    R"({"brokers":[{"id":"b1","rack":"r1","weight":2.5},{"id":"b2"}],"partitions":[]})"));
  REQUIRE(parsed.ok());
  CHECK(parsed.value().brokers[0].weight == 2.5);
  CHECK(parsed.value().brokers[1].weight == 1.0);
  auto back = model_to_json(parsed.value());
  CHECK(back["brokers"][0]["weight"] == 2.5);
  CHECK_FALSE(back["brokers"][1].contains("weight"));
  auto bad = model_from_json(nlohmann::json::parse(R"({"brokers":[{"id":"b1","weight":0}],"partitions":[]})"));
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error() == "brokers[0].weight: expected a number in [0.01, 100]");
  auto text = model_from_json(nlohmann::json::parse(R"({"brokers":[{"id":"b1","weight":"2"}],"partitions":[]})"));
  REQUIRE_FALSE(text.ok());
  CHECK(text.error() == "brokers[0].weight: expected a number in [0.01, 100]");
  auto rack = model_from_json(nlohmann::json::parse(R"({"brokers":[{"id":"b1","rack":"bad rack!"}],"partitions":[]})"));
  REQUIRE_FALSE(rack.ok());
  CHECK(rack.error() == "brokers[0].rack: at most 64 letters, digits, '.', '_' and '-'");
}

TEST_CASE("a draining broker's partitions stay in its rack when the rack can take them", "[goals][racks][drain]") {
  // b2 shares b1's rack but holds more partitions than b3 and b4: without
  // the rack rule the fewest-partitions rule would send everything to b3/b4.
  cluster_model m;
  m.brokers = {weighted("b1", 1, "ra"), weighted("b2", 1, "ra"), weighted("b3", 1, "rb"), weighted("b4", 1, "rb")};
  m.brokers[0].draining = true;
  int n = 0;
  for (int p = 0; p < 6; ++p) m.replicas.push_back(replica("t", n++, "b1"));
  for (int p = 0; p < 5; ++p) m.replicas.push_back(replica("t", n++, "b2"));
  for (int p = 0; p < 4; ++p) m.replicas.push_back(replica("t", n++, "b3"));
  for (int p = 0; p < 4; ++p) m.replicas.push_back(replica("t", n++, "b4"));
  m.goals["PARTITION_COUNT"].enabled = false;  // the drain alone
  auto p = plan_of(m);
  REQUIRE(p.drain);
  CHECK(p.drain->moved == 6);
  for (const auto& a : p.actions) CHECK(a.to == "b2");

  // A rack mate that a hard goal refuses is passed over: the drain still ends.
  m.brokers[1].capacity[0] = 1.0;  // NW_IN capacity 1 B/s
  for (auto& r : m.replicas)
    if (r.owner == "b1") r.load[0] = 1000.0;
  auto q = plan_of(m);
  REQUIRE(q.drain);
  CHECK(q.drain->moved == 6);
  for (const auto& a : q.actions) CHECK(rack_of(m, a.to) == "rb");
}

TEST_CASE("brokers that join are filled from their own rack", "[goals][racks]") {
  // b3 joins rack rb and b4 rack ra, both empty; b1 (ra) and b2 (rb) hold
  // 10 partitions each. Every move stays inside its rack (by load and
  // broker order alone, b1 would shed to b3 first).
  cluster_model m;
  m.brokers = {weighted("b1", 1, "ra"), weighted("b2", 1, "rb"), weighted("b3", 1, "rb"), weighted("b4", 1, "ra")};
  for (int p = 0; p < 10; ++p) m.replicas.push_back(replica("t", p, "b1"));
  for (int p = 0; p < 10; ++p) m.replicas.push_back(replica("u", p, "b2"));
  auto p = plan_of(m);
  REQUIRE_FALSE(p.actions.empty());
  for (const auto& a : p.actions) CHECK(rack_of(m, a.from) == rack_of(m, a.to));
  auto c = counts(applied(m, p));
  for (const auto& [b, n] : c) {
    CHECK(n >= 4);
    CHECK(n <= 6);
  }
  CHECK(report_of(p, "PARTITION_COUNT")->after.violators.empty());

  // Without racks the same cluster also balances, and some move crosses
  // what were the racks (the rule is what kept them apart).
  const cluster_model racked = m;
  for (auto& b : m.brokers) b.rack.clear();
  auto q = plan_of(m);
  bool crossed = false;
  for (const auto& a : q.actions) crossed = crossed || rack_of(racked, a.from) != rack_of(racked, a.to);
  CHECK(crossed);
}

TEST_CASE("a rack mate on the wrong side of the mean is no partner", "[goals][racks]") {
  // ra = {b1: 20, b2: 11}, rb = {b3: 9, b4: 0}, mean 10. b1 sheds; b2, its
  // rack mate, is above the mean already and must not take from it.
  cluster_model m;
  m.brokers = {weighted("b1", 1, "ra"), weighted("b2", 1, "ra"), weighted("b3", 1, "rb"), weighted("b4", 1, "rb")};
  int n = 0;
  for (int p = 0; p < 20; ++p) m.replicas.push_back(replica("t", n++, "b1"));
  for (int p = 0; p < 11; ++p) m.replicas.push_back(replica("t", n++, "b2"));
  for (int p = 0; p < 9; ++p) m.replicas.push_back(replica("t", n++, "b3"));
  auto p = plan_of(m);
  for (const auto& a : p.actions) {
    INFO(a.from << " -> " << a.to);
    CHECK(a.to != "b2");
    CHECK(a.from != "b4");
  }
  CHECK(report_of(p, "PARTITION_COUNT")->after.violators.empty());
  for (auto& b : m.brokers) b.rack.clear();
  CHECK(p.actions.size() <= plan_of(m).actions.size());
}
